"""The remote origin: the one HTTPS address (an HTTPS proxy such as ``tailscale serve``)
through which another device reaches Angelia, while Angelia itself stays on loopback.

Only ``https://HOST`` or ``https://HOST:PORT`` is accepted: no path, query, fragment or
user info, because the origin is compared exactly with what browsers send as ``Origin``,
and anything more would be a second meaning for the same setting. ``angelia remote
enable`` keeps what it set up in a 0600 record in the data dir (``remote.json``), which
``angelia serve`` reads when no origin is given on its command line or in the
environment.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from app.private import write_private

RECORD_NAME = "remote.json"
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_DNS_NAME = re.compile(rf"(?=.{{1,253}}\Z){_LABEL}(\.{_LABEL})*")
DEFAULT_PORT = 443


@dataclass(frozen=True)
class RemoteOrigin:
    """``https://host[:port]``, the host lower-case."""

    host: str
    port: int = DEFAULT_PORT

    @property
    def origin(self) -> str:
        return f"https://{self.host}" + ("" if self.port == DEFAULT_PORT else f":{self.port}")

    @property
    def host_headers(self) -> frozenset[str]:
        """Every ``Host`` (and ``Origin`` authority) naming it: the port may be left out
        only when it is the default one, as browsers do."""
        named = f"{self.host}:{self.port}"
        return frozenset({named, self.host} if self.port == DEFAULT_PORT else {named})

    def names(self, host_header: str) -> bool:
        return host_header.strip().lower() in self.host_headers


def parse_origin(text: str) -> RemoteOrigin:
    """The remote origin ``text`` names; ValueError says why it is not one."""
    raw = text.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{raw!r} is not a URL ({exc})") from None
    if parts.scheme != "https":
        raise ValueError(f"{raw!r} must start with https:// (the proxy in front serves HTTPS)")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError(f"{raw!r} must not hold a user name or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment or raw.endswith(("?", "#")):
        raise ValueError(f"{raw!r} must be only https://HOST or https://HOST:PORT (no path)")
    host = (parts.hostname or "").lower()
    if not _DNS_NAME.fullmatch(host):
        raise ValueError(f"{raw!r} must name a host (a DNS name such as machine.tailnet.ts.net)")
    if port == 0:
        raise ValueError(f"{raw!r} names port 0")
    if host == "localhost" or host.endswith(".localhost") or host.startswith("127."):
        # Requests naming it would be taken for remote ones: loopback is this machine's.
        raise ValueError(f"{raw!r} must not be a loopback name (it names this machine)")
    return RemoteOrigin(host, port or DEFAULT_PORT)


@dataclass(frozen=True)
class RemoteRecord:
    """What ``angelia remote enable`` set up: the origin, the Tailscale login that owns the
    machine (the only one its identity header may name), and the proxy settings it made,
    so that ``disable`` undoes exactly those."""

    origin: str
    owner: str | None = None
    serve: list[str] = field(default_factory=list)


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD_NAME


def read_record(data_dir: Path) -> RemoteRecord | None:
    """The record in ``data_dir``, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads(record_path(data_dir).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("origin"), str):
        return None
    owner = data.get("owner")
    serve = data.get("serve")
    return RemoteRecord(
        origin=data["origin"],
        owner=owner if isinstance(owner, str) and owner else None,
        serve=[str(s) for s in serve] if isinstance(serve, list) else [],
    )


def write_record(data_dir: Path, record: RemoteRecord) -> Path:
    """Replace the record (0600 from its creation)."""
    path = record_path(data_dir)
    path.unlink(missing_ok=True)
    write_private(path, json.dumps(asdict(record), indent=2) + "\n")
    return path


def remove_record(data_dir: Path) -> bool:
    try:
        record_path(data_dir).unlink()
    except FileNotFoundError:
        return False
    return True
