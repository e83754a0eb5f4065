"""Browser sign-ins: what a browser's cookie holds instead of the master token.

Opening the printed ``/?token=…`` URL creates a sign-in: a random secret for the cookie,
stored here only as its SHA-256, so neither the cookie nor the database can be turned
into the master token, and each browser can be signed out on its own. A sign-in ends
after ``IDLE`` without a request, and ``LIFETIME`` after it was made whatever its use.

Every request and every event stream checks its cookie, so checks are answered from
memory; the database is read once per sign-in after a start, and ``last_used_at`` is
written at most once per ``TOUCH_EVERY``. Each sign-in records which master token made
it, so a new token (the ``token`` file deleted, or ``ANGELIA_TOKEN`` changed) signs every
browser out, as it did when the cookie held the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import delete
from sqlalchemy.engine import CursorResult, Engine
from sqlmodel import Session, col, select

from app.db.models import SignIn, utcnow
from app.errors import NotFoundError
from app.services.access.live_cache import LiveCache
from app.services.access.user_agents import describe

# Long enough that a daily user signs in again only with a new browser; short enough that a
# forgotten browser (an old laptop, a test profile) stops being a way in on its own.
IDLE = timedelta(days=30)
LIFETIME = timedelta(days=90)
TOUCH_EVERY = timedelta(minutes=1)
LABEL_MAX = 200
# A cookie's secret is token_urlsafe(32): 43 characters. Anything much longer is not ours.
SECRET_MAX = 100


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_mark(token: str) -> str:
    """A fingerprint of the master token that does not give the token away."""
    return hmac.new(token.encode(), b"angelia-signin", hashlib.sha256).hexdigest()[:32]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def clean_label(user_agent: str) -> str:
    """The User-Agent as a one-line label (it is only shown, never trusted)."""
    text = "".join(ch for ch in user_agent if ch.isprintable()).strip()
    return text[:LABEL_MAX] or "unknown browser"


@dataclass
class SignInView:
    """One sign-in as the page and the API show it."""

    id: str
    label: str
    created_at: datetime
    last_used_at: datetime
    # The absolute end of the sign-in; it also ends after IDLE without use.
    expires_at: datetime

    @property
    def browser(self) -> str:
        """The label (a User-Agent) as a name: "Chrome on Linux"."""
        return describe(self.label)

    @property
    def ends_at(self) -> datetime:
        return min(self.expires_at, self.last_used_at + IDLE)

    def ended(self, now: datetime) -> bool:
        return now >= self.ends_at


@dataclass(frozen=True)
class Checked:
    """A cookie that is a live sign-in; ``touch_due`` asks the caller to record its use."""

    id: str
    touch_due: bool


def _view(row: SignIn) -> SignInView:
    return SignInView(
        id=row.id,
        label=row.label,
        created_at=_aware(row.created_at),
        last_used_at=_aware(row.last_used_at),
        expires_at=_aware(row.expires_at),
    )


class SignIns:
    """The sign-ins of one data dir and master token, with the cache the checks use.

    Made at start-up, it deletes the sign-ins an earlier master token made.
    """

    def __init__(self, engine: Engine, token: str) -> None:
        self._engine = engine
        self._mark = token_mark(token)
        # The sign-ins checked since the start, and when each one's use was last written.
        self._cache: LiveCache[SignInView] = LiveCache()
        self._forget_other_tokens()

    def create(self, user_agent: str, now: datetime | None = None) -> tuple[SignInView, str]:
        """A new sign-in; returns it and the secret for the cookie (never stored)."""
        now = now or utcnow()
        secret = secrets.token_urlsafe(32)
        row = SignIn(
            secret_hash=hash_secret(secret),
            label=clean_label(user_agent),
            created_at=now,
            last_used_at=now,
            expires_at=now + LIFETIME,
            token_mark=self._mark,
        )
        with Session(self._engine) as db:
            db.add(row)
            db.commit()
            db.refresh(row)
            view = _view(row)
        self._cache.put(row.secret_hash, view, now, fresh=True)
        return view, secret

    def check(self, secret: str | None, now: datetime | None = None) -> Checked | None:
        """The sign-in this cookie value belongs to, if it is live; None otherwise."""
        if not secret or len(secret) > SECRET_MAX:
            return None
        now = now or utcnow()
        digest = hash_secret(secret)
        view = self._cache.get(digest)
        if view is None:
            view = self._load(digest)
            if view is None:
                return None
        if view.ended(now):
            self._delete([view.id])
            return None
        view.last_used_at = max(view.last_used_at, now)
        written = self._cache.written_at(view.id, view.created_at)
        return Checked(view.id, touch_due=now - written >= TOUCH_EVERY)

    def alive(self, signin_id: str) -> bool:
        """True while the sign-in exists (a cheap look in memory, for open streams)."""
        return self._cache.alive(signin_id)

    def touch(self, signin_id: str) -> None:
        """Write the sign-in's last use (blocking: run it off the event loop)."""
        view = self._cache.find(signin_id)
        if view is None:
            return
        self._cache.mark_written(signin_id, view.last_used_at)
        with Session(self._engine) as db:
            row = db.get(SignIn, signin_id)
            if row is not None:
                row.last_used_at = view.last_used_at
                db.add(row)
                db.commit()

    def list(self, now: datetime | None = None) -> list[SignInView]:
        """The live sign-ins, most recently used first; ended ones are deleted."""
        now = now or utcnow()
        with Session(self._engine) as db:
            rows = [_view(r) for r in db.exec(select(SignIn)).all() if r.token_mark == self._mark]
        # Memory knows of uses not written yet.
        fresh = {v.id: v.last_used_at for v in self._cache.views()}
        for view in rows:
            view.last_used_at = max(view.last_used_at, fresh.get(view.id, view.last_used_at))
        live = [v for v in rows if not v.ended(now)]
        ended = [v.id for v in rows if v.ended(now)]
        if ended:
            self._delete(ended)
        return sorted(live, key=lambda v: v.last_used_at, reverse=True)

    def revoke(self, signin_id: str) -> None:
        """Sign one browser out; its cookie is refused from the next request on."""
        if not self._delete([signin_id]):
            raise NotFoundError(f"No signed-in browser with id {signin_id!r}.")

    def revoke_others(self, keep_id: str) -> int:
        """Sign out every browser but ``keep_id``; returns how many were signed out."""
        with Session(self._engine) as db:
            ids = [i for i in db.exec(select(SignIn.id)).all() if i != keep_id]
        return self._delete(ids)

    def _forget_other_tokens(self) -> None:
        with Session(self._engine) as db:
            query = select(SignIn.id).where(SignIn.token_mark != self._mark)
            self._delete(list(db.exec(query).all()))

    def _delete(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        # Memory first: a check that races this sees no sign-in rather than a stale one.
        self._cache.forget(ids)
        with Session(self._engine) as db:
            result = cast(
                CursorResult[Any], db.execute(delete(SignIn).where(col(SignIn.id).in_(ids)))
            )
            db.commit()
            return int(result.rowcount or 0)

    def _load(self, digest: str) -> SignInView | None:
        with Session(self._engine) as db:
            row = db.exec(select(SignIn).where(SignIn.secret_hash == digest)).first()
            if row is None or row.token_mark != self._mark:
                return None
            view = _view(row)
        # Revoked between the read above and now: caching it would keep a cookie
        # working that the list (read from the database) no longer shows.
        if not self._cache.put(digest, view, view.last_used_at):
            return None
        return view
