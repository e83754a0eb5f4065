"""Web Push subscriptions: where to reach each browser that asked to be notified.

A subscription is the browser's push-service URL (``endpoint``) and its keys. Only the
known push services (Google's FCM, Mozilla's, Apple's, Microsoft's) are accepted as
endpoints, over https, plus any origin the owner lists in ``ANGELIA_PUSH_ENDPOINTS``:
otherwise anyone who could post a subscription would make this server send requests
to an address of their choosing (a page on the LAN, a service on loopback).

A subscription posted by a signed-in browser is tied to that sign-in, and deleted by
the database with it when that browser is signed out; one posted by a paired device
(through the remote origin) is tied to that device, and deleted when it is unpaired;
one posted with the master token (a script) is tied to nothing and lasts until it is
deleted, or the push service answers that it is gone.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import PushSubscription
from app.errors import ValidationFailed

KNOWN_HOSTS = frozenset({"fcm.googleapis.com", "updates.push.services.mozilla.com"})
KNOWN_SUFFIXES = (".push.apple.com", ".notify.windows.com")
ENDPOINT_MAX = 2048


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_endpoint(endpoint: str, listed: Collection[str]) -> None:
    """Refuse (422) an endpoint that is not a push service this server may post to."""
    if len(endpoint) > ENDPOINT_MAX:
        raise ValidationFailed("endpoint", f"longer than {ENDPOINT_MAX} characters")
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        raise ValidationFailed("endpoint", "not a URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValidationFailed("endpoint", "not an http(s) URL")
    if parts.username or parts.password:
        raise ValidationFailed("endpoint", "a URL with a user name or password")
    if origin_of(endpoint) in listed:
        return
    if parts.scheme != "https":
        raise ValidationFailed(
            "endpoint", "not https (list its origin in ANGELIA_PUSH_ENDPOINTS to allow it)"
        )
    host = parts.hostname.lower()
    known = host in KNOWN_HOSTS or host.endswith(KNOWN_SUFFIXES)
    if not known or port not in (None, 443):
        raise ValidationFailed(
            "endpoint",
            f"{host} is not a known push service (FCM, Mozilla, Apple, Windows); "
            "list its origin in ANGELIA_PUSH_ENDPOINTS to allow it",
        )


def _decoded(field: str, value: str, size: int) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise ValidationFailed(field, "not base64url") from None
    if len(raw) != size:
        raise ValidationFailed(field, f"{len(raw)} bytes, not {size}")
    return raw


def check_keys(p256dh: str, auth: str) -> None:
    """Refuse keys the payload could not be encrypted to (RFC 8291)."""
    point = _decoded("keys.p256dh", p256dh, 65)
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError:
        raise ValidationFailed("keys.p256dh", "not a P-256 public key") from None
    _decoded("keys.auth", auth, 16)


class PushSubscriptions:
    """The stored subscriptions (blocking: callers on the event loop use a thread)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def add(
        self,
        endpoint: str,
        p256dh: str,
        auth: str,
        signin_id: str | None,
        device_id: str | None = None,
    ) -> PushSubscription:
        """Store a subscription; the same endpoint again replaces its keys and owner."""
        with Session(self._engine) as db:
            row = db.exec(
                select(PushSubscription).where(col(PushSubscription.endpoint) == endpoint)
            ).first()
            if row is None:
                row = PushSubscription(endpoint=endpoint, p256dh=p256dh, auth=auth)
            row.p256dh, row.auth, row.signin_id = p256dh, auth, signin_id
            row.device_id = device_id
            db.add(row)
            db.commit()
            db.refresh(row)
            return row

    def remove(self, endpoint: str) -> bool:
        with Session(self._engine) as db:
            done = db.execute(
                delete(PushSubscription).where(col(PushSubscription.endpoint) == endpoint)
            )
            db.commit()
            return bool(getattr(done, "rowcount", 0))

    def forget(self, subscription_id: str) -> None:
        """Delete one the push service said is gone (404, 410)."""
        with Session(self._engine) as db:
            db.execute(delete(PushSubscription).where(col(PushSubscription.id) == subscription_id))
            db.commit()

    def all(self) -> list[PushSubscription]:
        with Session(self._engine) as db:
            return list(db.exec(select(PushSubscription)).all())
