"""What every response and page shares for access: the security headers, the master
token, the CSRF token and the link key open pages check the server with.

The access check itself, which uses them, is app/web/access/guard.py.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from starlette.types import Message, Send

from app.settings import Settings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def load_or_create_token(settings: Settings) -> str:
    """The token from settings/env, else the one kept in the data dir (made once)."""
    if settings.token:
        return settings.token
    path: Path = settings.token_path
    if path.exists():
        stored = path.read_text().strip()
        if stored:
            return stored
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(token + "\n")
    return token


def csrf_token_for(token: str) -> str:
    return hmac.new(token.encode(), b"angelia-csrf", hashlib.sha256).hexdigest()


def link_key_for(token: str) -> str:
    """The key an open page checks the server with before it sends its cookie again
    (static/js/link.js): only this server, which knows the token, can answer with it."""
    return hmac.new(token.encode(), b"angelia-link", hashlib.sha256).hexdigest()


def link_proof(token: str, challenge: str) -> str:
    """The answer to a page's challenge: HMAC-SHA256 of it under the link key."""
    return hmac.new(link_key_for(token).encode(), challenge.encode(), hashlib.sha256).hexdigest()


def with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            message["headers"] = list(message.get("headers", [])) + extra
        await send(message)

    return wrapped


async def plain_response(send: Send, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})
