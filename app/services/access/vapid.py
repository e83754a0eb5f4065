"""The server's VAPID key pair (RFC 8292) and the subject that goes with it.

The key pair is made once and kept in the data dir, in a file only the user can read:
the browser's subscription is bound to the public key, so a new key would silently
orphan every subscription. The subject is the contact a push service may write to;
Apple refuses a push whose subject is a localhost, ``.local`` or ``.invalid`` name
(``403 BadJwtToken``), so such a subject is refused here, before anything is sent.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid

from app.private import write_private

KEY_FILE = "vapid-private.pem"
# Names a push service cannot reach anyone at.
_UNREACHABLE_SUFFIXES = (".local", ".invalid", ".localhost", ".test", ".example")
_UNREACHABLE_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class VapidKey:
    vapid: Vapid
    # The uncompressed P-256 point, base64url: the browser's applicationServerKey.
    public_key: str


def load_or_create(data_dir: Path) -> VapidKey:
    """The data dir's key pair, made (0600) on first use."""
    path = data_dir / KEY_FILE
    if not path.exists():
        fresh = Vapid()
        fresh.generate_keys()
        # Another start may have made it first: then that one is used.
        with contextlib.suppress(FileExistsError):
            write_private(path, fresh.private_pem().decode())
    vapid = Vapid.from_pem(path.read_bytes())
    point = vapid.public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return VapidKey(vapid, b64url(point))


def _unreachable(host: str) -> bool:
    host = host.lower().rstrip(".")
    return not host or host in _UNREACHABLE_NAMES or host.endswith(_UNREACHABLE_SUFFIXES)


@dataclass(frozen=True)
class Subject:
    """The VAPID subject to send with, or why there is none (``value`` empty)."""

    value: str
    refusal: str = ""


def subject_for(configured: str, remote_origin: str) -> Subject:
    """``configured`` (ANGELIA_PUSH_SUBJECT) if usable, else the remote origin's https URL."""
    if configured:
        if configured.startswith("mailto:"):
            host = configured.partition("@")[2]
            if "@" not in configured or _unreachable(host):
                return Subject("", f"the push subject {configured!r} is no reachable address")
            return Subject(configured)
        parts = urlsplit(configured)
        if parts.scheme != "https" or _unreachable(parts.hostname or ""):
            why = "is not mailto: or a public https URL"
            return Subject("", f"the push subject {configured!r} {why}")
        return Subject(f"https://{parts.hostname}")
    if remote_origin:
        parts = urlsplit(remote_origin)
        host = parts.hostname or ""
        if parts.scheme != "https" or _unreachable(host):
            return Subject("", f"the remote origin {remote_origin!r} cannot be a push subject")
        # Without the port: Apple compares the subject to a web origin it can reach.
        return Subject(f"https://{host}")
    return Subject(
        "",
        "no push subject: set ANGELIA_PUSH_SUBJECT to a mailto: address "
        "(or ANGELIA_REMOTE_ORIGIN to this app's https origin)",
    )
