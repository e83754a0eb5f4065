"""The sign-in store: checks come from memory, and last use is written at most once a
minute, however many requests and event streams a browser makes."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.db.engine import open_database
from app.db.models import SignIn, utcnow
from app.services.access.signins import TOUCH_EVERY, SignIns
from tests.conftest import TOKEN


def stored_last_use(engine: Engine, signin_id: str) -> datetime:
    """The stored time, naive (UTC), whatever the driver hands back."""
    with Session(engine) as db:
        row = db.get(SignIn, signin_id)
        assert row is not None
        return row.last_used_at.replace(tzinfo=None)


def test_last_use_is_written_at_most_once_a_minute(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "data")
    signins = SignIns(engine, TOKEN)
    start = utcnow()
    view, secret = signins.create("a browser", now=start)
    for seconds in (1, 20, 59):
        checked = signins.check(secret, now=start + timedelta(seconds=seconds))
        assert checked is not None and checked.id == view.id
        assert not checked.touch_due
    later = start + TOUCH_EVERY + timedelta(seconds=1)
    checked = signins.check(secret, now=later)
    assert checked is not None and checked.touch_due
    signins.touch(checked.id)
    assert stored_last_use(engine, view.id) == later.replace(tzinfo=None)
    # Written: the next minute starts again.
    checked = signins.check(secret, now=later + timedelta(seconds=5))
    assert checked is not None and not checked.touch_due


def test_a_restarted_app_knows_the_signin_and_not_the_revoked_one(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "data")
    first = SignIns(engine, TOKEN)
    kept, kept_secret = first.create("kept")
    gone, gone_secret = first.create("gone")
    first.revoke(gone.id)
    again = SignIns(engine, TOKEN)  # a new process: an empty cache
    checked = again.check(kept_secret)
    assert checked is not None and checked.id == kept.id
    assert again.check(gone_secret) is None
    assert again.check("x" * 10_000) is None and again.check("") is None
    assert [v.label for v in again.list()] == ["kept"]


def test_a_new_master_token_signs_every_browser_out(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "data")
    _, secret = SignIns(engine, TOKEN).create("a browser")
    renewed = SignIns(engine, TOKEN + "-new")
    assert renewed.check(secret) is None
    assert renewed.list() == []
    # The old rows are gone, not only hidden: going back to the old token finds none.
    assert SignIns(engine, TOKEN).check(secret) is None
