"""Device sessions: what a request through the remote origin must carry.

A device (a phone, a laptop elsewhere) is let in through the remote origin only with a
session of its own, made by pairing it from a signed-in desktop browser or ``angelia
pair`` (app/services/access/pairing.py). The master token and the desktop's sign-in
cookie are never enough there: both are meant for this machine only, and the proxy in
front forwards whatever the other device sends.

The server mints each session's secret (256 bits) when the pairing is allowed and the
phone collects it; an id a client sends is never adopted (no fixation). Only its SHA-256
is stored. A session ends ``IDLE`` after its last request (sliding), or when revoked;
revoking also deletes the device's push subscriptions. Checks are answered from memory,
like the sign-ins'; ``last_seen_at`` is written at most once per ``TOUCH_EVERY``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import Device, PushSubscription, utcnow
from app.errors import NotFoundError
from app.services.access.live_cache import LiveCache
from app.services.access.signins import SECRET_MAX, TOUCH_EVERY, hash_secret

# Secure, host-only and for the whole site: what the ``__Host-`` prefix makes browsers keep.
DEVICE_COOKIE = "__Host-angelia_device"
IDLE = timedelta(days=30)
NAME_MAX = 60


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def clean_name(name: str) -> str:
    """The name a phone gave, on one line and short (it is only shown, never trusted)."""
    text = " ".join("".join(ch for ch in name if ch.isprintable()).split())
    return text[:NAME_MAX] or "unnamed device"


@dataclass
class DeviceView:
    """One paired device as the page and the API show it."""

    id: str
    name: str
    created_at: datetime
    last_seen_at: datetime

    @property
    def ends_at(self) -> datetime:
        return self.last_seen_at + IDLE


@dataclass(frozen=True)
class CheckedDevice:
    id: str
    touch_due: bool


def _view(row: Device) -> DeviceView:
    return DeviceView(row.id, row.name, _aware(row.created_at), _aware(row.last_seen_at))


class DeviceSessions:
    """The paired devices of one data dir, with the cache the checks use.

    Made without an engine (tests of the access check alone) it knows no device.
    """

    def __init__(self, engine: Engine | None = None) -> None:
        self._engine = engine
        self._cache: LiveCache[DeviceView] = LiveCache()

    def create(self, name: str, now: datetime | None = None) -> tuple[DeviceView, str]:
        """A new device session; returns it and the cookie's secret (never stored)."""
        if self._engine is None:
            raise RuntimeError("no database: device sessions cannot be made here")
        now = now or utcnow()
        secret = secrets.token_urlsafe(32)
        row = Device(
            secret_hash=hash_secret(secret),
            name=clean_name(name),
            created_at=now,
            last_seen_at=now,
        )
        with Session(self._engine) as db:
            db.add(row)
            db.commit()
            db.refresh(row)
            view = _view(row)
        self._cache.put(row.secret_hash, view, now, fresh=True)
        return view, secret

    def check(self, secret: str | None, now: datetime | None = None) -> CheckedDevice | None:
        """The live device session this cookie value belongs to, if any."""
        if not secret or len(secret) > SECRET_MAX or self._engine is None:
            return None
        now = now or utcnow()
        digest = hash_secret(secret)
        view = self._cache.get(digest)
        if view is None:
            view = self._load(digest)
            if view is None:
                return None
        if now >= view.ends_at:
            self._delete(view.id)
            return None
        view.last_seen_at = max(view.last_seen_at, now)
        written = self._cache.written_at(view.id, view.created_at)
        return CheckedDevice(view.id, touch_due=now - written >= TOUCH_EVERY)

    def alive(self, device_id: str) -> bool:
        """True while the device is paired (a cheap look in memory, for open streams)."""
        return self._cache.alive(device_id)

    def touch(self, device_id: str) -> None:
        """Write the device's last request (blocking: run it off the event loop)."""
        if self._engine is None:
            return
        view = self._cache.find(device_id)
        if view is None:
            return
        self._cache.mark_written(device_id, view.last_seen_at)
        with Session(self._engine) as db:
            row = db.get(Device, device_id)
            if row is not None:
                row.last_seen_at = view.last_seen_at
                db.add(row)
                db.commit()

    def list(self, now: datetime | None = None) -> list[DeviceView]:
        """The paired devices, most recently seen first; ended ones are deleted."""
        if self._engine is None:
            return []
        now = now or utcnow()
        with Session(self._engine) as db:
            rows = [_view(r) for r in db.exec(select(Device)).all()]
        fresh = {v.id: v.last_seen_at for v in self._cache.views()}
        for view in rows:
            view.last_seen_at = max(view.last_seen_at, fresh.get(view.id, view.last_seen_at))
        for view in rows:
            if now >= view.ends_at:
                self._delete(view.id)
        live = [v for v in rows if now < v.ends_at]
        return sorted(live, key=lambda v: v.last_seen_at, reverse=True)

    def revoke(self, device_id: str) -> None:
        """Unpair a device: its cookie is refused from its next request, its open streams
        end, and its push subscriptions are deleted."""
        if not self._delete(device_id):
            raise NotFoundError(f"No paired device with id {device_id!r}.")

    def _delete(self, device_id: str) -> bool:
        # Memory first: a check that races this sees no device rather than a stale one.
        self._cache.forget([device_id])
        assert self._engine is not None
        with Session(self._engine) as db:
            # Said outright as well as by the foreign key's cascade.
            db.execute(delete(PushSubscription).where(col(PushSubscription.device_id) == device_id))
            row = db.get(Device, device_id)
            if row is None:
                db.commit()
                return False
            db.delete(row)
            db.commit()
            return True

    def _load(self, digest: str) -> DeviceView | None:
        assert self._engine is not None
        with Session(self._engine) as db:
            row = db.exec(select(Device).where(Device.secret_hash == digest)).first()
            if row is None:
                return None
            view = _view(row)
        if not self._cache.put(digest, view, view.last_seen_at):
            return None  # unpaired between the read above and now
        return view
