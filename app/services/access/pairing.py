"""Pairings: how a phone gets a device session, only with the desktop's consent.

A pairing is made only by a signed-in desktop (a loopback request) or ``angelia pair``,
never through the remote origin. It holds two secrets, each stored as its SHA-256 and
compared with ``hmac.compare_digest``: 32 random bytes for the QR's URL (in the fragment,
so never in a request line, a log or a Referer) and an 8-character Crockford base32 code
to type. A pairing lives ``LIFETIME``, is redeemed once, and is void after ``TRIES``
wrong tries. Every failure gets the same answer, and one global budget of failures
(``BUDGET`` per ``WINDOW``, not per client: behind the proxy every client is loopback)
refuses every redeem while it is spent.

Redeeming does not let the phone in: it marks the pairing *asked* with the name the phone
gave, and hands the phone a waiting id. Only once the desktop allows it does the phone's
next status check mint the device session (app/services/access/devices.py) and set its
cookie. Pairings live in memory: a restart forgets them, as it does the sign-in links.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from app.db.models import utcnow
from app.errors import AppError, NotFoundError

LIFETIME = timedelta(minutes=5)
TRIES = 5
BUDGET = 10
WINDOW = timedelta(minutes=1)
CODE_LENGTH = 8
# Crockford's base32: no I, L, O, U. What a person types is read leniently (below).
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_TYPED = str.maketrans({"I": "1", "L": "1", "O": "0", "-": None, " ": None})
SECRET_MAX = 100
FAILED = "This pairing did not work. Make a new one on the computer where Angelia runs."


class PairingFailed(AppError):
    """The one answer to every failed redeem (status 400)."""

    def __init__(self) -> None:
        super().__init__(FAILED)


class State(enum.StrEnum):
    OPEN = "open"  # made, waiting for the phone
    ASKED = "asked"  # the phone redeemed it; the desktop has to allow or refuse
    ALLOWED = "allowed"  # the phone's next status check collects its session
    REFUSED = "refused"
    DONE = "done"


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def normalize_code(typed: str) -> str:
    return typed.upper().translate(_TYPED)


@dataclass
class Pairing:
    id: str
    secret_hash: bytes
    code_hash: bytes
    expires_at: datetime
    state: State = State.OPEN
    wrong: int = 0
    name: str = ""
    wait_hash: bytes = b""
    asked_at: datetime | None = None

    def live(self, now: datetime) -> bool:
        return now < self.expires_at and self.state in (State.OPEN, State.ASKED, State.ALLOWED)


@dataclass(frozen=True)
class Issued:
    """A new pairing as its maker sees it once: the secret and the code are not kept."""

    id: str
    secret: str
    code: str
    expires_at: datetime


@dataclass(frozen=True)
class Waiting:
    """A redeemed pairing as the desktop's page lists it."""

    id: str
    name: str
    asked_at: datetime


@dataclass
class Pairings:
    """The pairings of a running server (in memory, thread-safe)."""

    budget: int = BUDGET
    _items: dict[str, Pairing] = field(default_factory=dict)
    _failures: deque[datetime] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, now: datetime | None = None) -> Issued:
        now = now or utcnow()
        secret = secrets.token_urlsafe(32)  # 32 random bytes, base64url
        code = "".join(secrets.choice(CROCKFORD) for _ in range(CODE_LENGTH))
        pairing = Pairing(
            id=secrets.token_hex(8),
            secret_hash=_digest(secret),
            code_hash=_digest(code),
            expires_at=now + LIFETIME,
        )
        with self._lock:
            self._prune(now)
            self._items[pairing.id] = pairing
        return Issued(pairing.id, secret, code, pairing.expires_at)

    def redeem(
        self, *, secret: str | None, code: str | None, name: str, now: datetime | None = None
    ) -> str:
        """Mark the pairing this secret or code opens as asked; returns the waiting id the
        phone checks its answer with. Raises PairingFailed, always the same, otherwise."""
        now = now or utcnow()
        with self._lock:
            self._prune(now)
            while self._failures and now - self._failures[0] >= WINDOW:
                self._failures.popleft()
            if len(self._failures) >= self.budget:
                raise PairingFailed()
            found = self._match(secret, code, now)
            if found is None:
                self._failures.append(now)
                if code is not None:
                    # A wrong code counts against every pairing a code could still open.
                    for pairing in self._items.values():
                        pairing.wrong += 1
                        if pairing.wrong >= TRIES and pairing.state is State.OPEN:
                            pairing.state = State.REFUSED
                raise PairingFailed()
            waiting = secrets.token_urlsafe(32)
            found.state = State.ASKED
            found.name = name
            found.wait_hash = _digest(waiting)
            found.asked_at = now
            return waiting

    def _match(self, secret: str | None, code: str | None, now: datetime) -> Pairing | None:
        if (secret is None) == (code is None):
            return None  # exactly one of them, or it is a failure like any other
        if secret is not None and 0 < len(secret) <= SECRET_MAX:
            wanted, attr = _digest(secret), "secret_hash"
        elif code is not None and 0 < len(code) <= SECRET_MAX:
            wanted, attr = _digest(normalize_code(code)), "code_hash"
        else:
            return None
        found = None
        for pairing in self._items.values():
            # Every candidate is compared, so the time taken does not say which matched.
            same = hmac.compare_digest(getattr(pairing, attr), wanted)
            if same and pairing.state is State.OPEN and pairing.live(now):
                found = pairing
        return found

    def status(self, waiting: str, now: datetime | None = None) -> tuple[State, str | None]:
        """What the desktop answered the phone holding ``waiting``: ``(ALLOWED, name)``
        once, after which the pairing is done; REFUSED for a refused, expired or unknown
        one; ASKED while it waits."""
        now = now or utcnow()
        if not waiting or len(waiting) > SECRET_MAX:
            return State.REFUSED, None
        wanted = _digest(waiting)
        with self._lock:
            self._prune(now)
            for pairing in self._items.values():
                if pairing.wait_hash and hmac.compare_digest(pairing.wait_hash, wanted):
                    if pairing.state is State.ALLOWED:
                        pairing.state = State.DONE
                        return State.ALLOWED, pairing.name
                    if pairing.state is State.ASKED:
                        return State.ASKED, None
                    break
        return State.REFUSED, None

    def answer(self, pairing_id: str, allow: bool, now: datetime | None = None) -> None:
        """The desktop's Allow or Refuse for a pairing a phone redeemed."""
        now = now or utcnow()
        with self._lock:
            self._prune(now)
            pairing = self._items.get(pairing_id)
            if pairing is None or pairing.state is not State.ASKED:
                raise NotFoundError("No pairing with that id waits for an answer.")
            pairing.state = State.ALLOWED if allow else State.REFUSED

    def waiting(self, now: datetime | None = None) -> list[Waiting]:
        """The pairings a phone redeemed and the desktop has not answered yet."""
        now = now or utcnow()
        with self._lock:
            self._prune(now)
            return [
                Waiting(p.id, p.name, p.asked_at or now)
                for p in self._items.values()
                if p.state is State.ASKED
            ]

    def _prune(self, now: datetime) -> None:
        for key in [k for k, p in self._items.items() if not p.live(now)]:
            del self._items[key]
