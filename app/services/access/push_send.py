"""Sending one notice to every subscribed browser (RFC 8030, 8291, 8292).

What a push carries shows on a lock screen and passes through Google's, Apple's or
Mozilla's servers (encrypted to the browser, but timing and size are theirs to see), so
a notice names only the profile and, for an approval, the tool: never a command, a
path, a file's contents or anything the agent wrote. The page stays the source of
truth; tapping the notification opens it.

Each send builds its own VAPID claims: ``aud`` is the endpoint's origin, and one dict
shared between Apple's and Google's endpoints would carry the wrong one. The POST is
``requests`` (blocking), so it runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from app.db.models import PushSubscription
from app.services.access.push import PushSubscriptions, origin_of
from app.services.access.push_settings import PushSettings
from app.services.access.vapid import VapidKey, b64url, subject_for

log = logging.getLogger(__name__)

# RFC 8291 §4: the plaintext a push service must accept, at most.
PAYLOAD_MAX = 3993
# RFC 8292: a JWT valid for at most 24 hours; 12 leaves room for clock skew.
JWT_LIFETIME_S = 12 * 3600
NAME_MAX = 80
Urgency = Literal["very-low", "low", "normal", "high"]


@dataclass(frozen=True)
class Notice:
    """One notification's payload (what the service worker shows)."""

    kind: str
    session_id: str
    title: str
    body: str
    url: str
    urgency: Urgency = field(default="normal", compare=False)

    def payload(self) -> str:
        data = asdict(self)
        data.pop("urgency")
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        while len(text.encode()) > PAYLOAD_MAX and data["body"]:
            data["body"] = data["body"][: len(data["body"]) // 2]
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return text


def shown_name(name: str) -> str:
    """A profile's or tool's name as one short printable line."""
    text = "".join(ch if ch.isprintable() else " " for ch in name).strip()
    return text[:NAME_MAX] or "?"


def topic_for(session_id: str) -> str:
    """The RFC 8030 Topic for a session: a newer notice replaces a waiting older one.

    At most 32 base64url characters; a hash, so the push service never sees the id.
    """
    return b64url(hashlib.sha256(b"angelia-topic:" + session_id.encode()).digest())[:32]


@dataclass(frozen=True)
class Outcome:
    subscription_id: str
    status: int  # 0: no answer (the connection failed)


def _retry_after(value: str | None, cap: float) -> float:
    try:
        wait = float(value) if value is not None else 1.0
    except ValueError:
        wait = 1.0  # an HTTP date: not worth parsing for one retry
    return max(0.0, min(wait, cap))


class PushSender:
    def __init__(
        self,
        subscriptions: PushSubscriptions,
        key: VapidKey,
        settings: PushSettings,
        remote_origin: str = "",
    ):
        self._subs = subscriptions
        self._key = key
        self._settings = settings
        # The origin `angelia serve` settled on (option, environment or `angelia remote
        # enable`'s record): the subject's stand-in when none is set.
        self._remote_origin = remote_origin

    def subscribed(self) -> bool:
        """Whether any browser is subscribed (blocking: a database read)."""
        return bool(self._subs.all())

    def warm(self) -> None:
        """Import the push library now (blocking: run it in a thread at start) when some
        browser is subscribed, so the first push does not wait most of a second for it."""
        if self.subscribed():
            importlib.import_module("pywebpush")

    async def send(self, notice: Notice) -> list[Outcome]:
        """Send ``notice`` to every subscription; gone ones are deleted."""
        subs = await asyncio.to_thread(self._subs.all)
        if not subs:
            return []
        # Said only when some browser waits for it: most installs never subscribe one.
        subject = subject_for(self._settings.subject, self._remote_origin)
        if not subject.value:
            log.warning("Push not sent: %s.", subject.refusal)
            return []
        data = notice.payload()
        sends = (asyncio.to_thread(self._deliver, s, data, notice, subject.value) for s in subs)
        return list(await asyncio.gather(*sends))

    def _deliver(self, sub: PushSubscription, data: str, notice: Notice, subject: str) -> Outcome:
        status, retry_after = self._post(sub, data, notice, subject)
        if status == 429 or status >= 500:
            time.sleep(_retry_after(retry_after, self._settings.retry_cap_s))
            status, _ = self._post(sub, data, notice, subject)
        if status in (404, 410):
            self._subs.forget(sub.id)
            log.info("Push subscription at %s is gone; deleted it.", origin_of(sub.endpoint))
        elif status == 403:
            log.warning(
                "Push refused (403) by %s: it did not accept the VAPID subject %r.",
                origin_of(sub.endpoint),
                subject,
            )
        elif not 200 <= status < 300:
            log.warning("Push to %s failed: status %s.", origin_of(sub.endpoint), status or "none")
        return Outcome(sub.id, status)

    def _post(
        self, sub: PushSubscription, data: str, notice: Notice, subject: str
    ) -> tuple[int, str | None]:
        # A fresh dict per send: the audience is this endpoint's origin.
        claims: dict[str, str | int] = {
            "sub": subject,
            "aud": origin_of(sub.endpoint),
            "exp": int(time.time()) + JWT_LIFETIME_S,
        }
        headers: dict[str, str] = dict(self._key.vapid.sign(claims))
        headers["Urgency"] = notice.urgency
        headers["Topic"] = topic_for(notice.session_id)
        info = {"endpoint": sub.endpoint, "keys": {"p256dh": sub.p256dh, "auth": sub.auth}}
        # Imported at the first push, in this worker thread: with requests and aiohttp it
        # takes most of a second, which every start of the app would otherwise wait for.
        from pywebpush import WebPusher

        try:
            resp = WebPusher(info).send(
                data,
                headers,
                ttl=self._settings.ttl_s,
                content_encoding="aes128gcm",
                timeout=self._settings.timeout_s,
            )
        except Exception as exc:  # the push service could not be reached
            log.warning("Push to %s failed: %s", origin_of(sub.endpoint), type(exc).__name__)
            return 0, None
        return int(resp.status_code), resp.headers.get("Retry-After")
