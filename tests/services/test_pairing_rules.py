"""The pairing rules that need a clock: lifetime and the failure budget's window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.services.access.pairing import BUDGET, LIFETIME, PairingFailed, Pairings, State

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_pairing_lives_five_minutes() -> None:
    pairings = Pairings()
    issued = pairings.create(now=T0)
    assert issued.expires_at == T0 + timedelta(minutes=5) == T0 + LIFETIME
    with pytest.raises(PairingFailed):
        pairings.redeem(secret=issued.secret, code=None, name="late", now=T0 + LIFETIME)
    fresh = pairings.create(now=T0)
    waiting = pairings.redeem(
        secret=None, code=fresh.code, name="in time", now=T0 + LIFETIME - timedelta(seconds=1)
    )
    assert pairings.status(waiting, now=T0 + LIFETIME - timedelta(seconds=1)) == (
        State.ASKED,
        None,
    )
    # Not answered in its lifetime: the phone is told no.
    assert pairings.status(waiting, now=T0 + LIFETIME) == (State.REFUSED, None)


def test_the_failure_budget_refills_after_a_minute() -> None:
    pairings = Pairings()
    issued = pairings.create(now=T0)
    for _ in range(BUDGET):
        with pytest.raises(PairingFailed):
            pairings.redeem(secret="x" * 43, code=None, name="", now=T0)
    with pytest.raises(PairingFailed):
        pairings.redeem(secret=issued.secret, code=None, name="", now=T0 + timedelta(seconds=59))
    assert pairings.redeem(
        secret=issued.secret, code=None, name="ok", now=T0 + timedelta(seconds=60)
    )


def test_only_hashes_are_kept() -> None:
    pairings = Pairings()
    issued = pairings.create(now=T0)
    waiting = pairings.redeem(secret=issued.secret, code=None, name="n", now=T0)
    held = repr(vars(pairings))
    for secret in (issued.secret, issued.code, waiting):
        assert secret not in held
