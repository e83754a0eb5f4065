"""Sign-in codes: what ``angelia serve`` and ``angelia open`` give a browser instead of the
master token.

A code signs one browser in once (``/signin?code=…`` makes a sign-in, app/services/
signins.py) and only within ``LIFETIME`` of being made, so a copy of it left in a browser's
command line, its history or the terminal is worth nothing once used or two minutes
old. Codes live in memory only: a restart forgets them, and only their SHA-256 is kept.
The browser is not handed the code on its command line either: ``opener_page`` writes it
into a page that only this user can read, and the browser is given that file's path.
"""

from __future__ import annotations

import enum
import html
import os
import secrets
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.private import write_private
from app.services.access.signins import hash_secret

LIFETIME = timedelta(minutes=2)
# How long a used or expired code is remembered, to say which it was.
REMEMBER = timedelta(hours=1)
# A code is token_urlsafe(32): 43 characters. Anything much longer is not ours.
CODE_MAX = 100
OPENER_NAME = "open.html"


class Outcome(enum.Enum):
    OK = "ok"
    USED = "used"
    EXPIRED = "expired"
    UNKNOWN = "unknown"


def _now() -> datetime:
    return datetime.now(UTC)


class SignInCodes:
    """The codes this server made and not yet forgot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # code hash -> (when it expires, used already)
        self._codes: dict[str, tuple[datetime, bool]] = {}

    def issue(self, now: datetime | None = None) -> str:
        """A new code, valid once within ``LIFETIME``."""
        now = now or _now()
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._forget_old(now)
            self._codes[hash_secret(code)] = (now + LIFETIME, False)
        return code

    def redeem(self, code: str, now: datetime | None = None) -> Outcome:
        """Use ``code``: OK the first time within its lifetime, and never again."""
        if not code or len(code) > CODE_MAX:
            return Outcome.UNKNOWN
        now = now or _now()
        digest = hash_secret(code)
        with self._lock:
            found = self._codes.get(digest)
            if found is None:
                return Outcome.UNKNOWN
            expires, used = found
            if used:
                return Outcome.USED
            if now >= expires:
                return Outcome.EXPIRED
            self._codes[digest] = (expires, True)
            return Outcome.OK

    def _forget_old(self, now: datetime) -> None:
        old = [d for d, (expires, _) in self._codes.items() if now >= expires + REMEMBER]
        for digest in old:
            del self._codes[digest]


def signin_url(base_url: str, code: str) -> str:
    """The link that signs a browser in with ``code`` (``base_url`` ends with ``/``)."""
    return f"{base_url}signin?code={code}"


def opener_page(data_dir: Path, url: str) -> Path:
    """Write a page that sends the browser to ``url``, readable by this user only.

    The browser is started with this file's path, never with ``url``: every local user can
    read a process's command line, but not a 0600 file in the private data dir. The page is
    replaced whole (a new file renamed over the old), never written through a link.
    """
    target = data_dir / OPENER_NAME
    temp = data_dir / f".{OPENER_NAME}.{secrets.token_hex(8)}"
    link = html.escape(url, quote=True)
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0;url={link}">\n'
        "<title>Opening Angelia</title></head>\n"
        f'<body><p><a href="{link}">Open Angelia</a></p></body></html>\n'
    )
    try:
        write_private(temp, page)
        os.replace(temp, target)
    except FileExistsError:
        raise  # not ours to remove
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target
