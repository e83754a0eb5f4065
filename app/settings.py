"""All settings in one place (environment variables prefixed ``ANGELIA_``)."""

from __future__ import annotations

import ipaddress
import re
import secrets
import socket
from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.db.datadir import create_private_file, make_private_dir

LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "[::1]"})
# Loopback names every local server shares: a browser sends their cookies to all ports.
SHARED_LOOPBACK: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_PORT = re.compile(r"[0-9]{1,5}")


def _default_data_dir() -> Path:
    return Path(user_data_dir("angelia", appauthor=False))


class Settings(BaseSettings):
    """Runtime settings; the CLI fills host/port/data_dir from its flags."""

    model_config = SettingsConfigDict(env_prefix="ANGELIA_", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir)
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    # Extra names (besides loopback) that the Host header may carry.
    allowed_hosts: list[str] = Field(default_factory=list)
    # https://HOST[:PORT] of the HTTPS proxy other devices come through
    # (``angelia serve --remote-origin``, or the record ``angelia remote enable`` keeps).
    remote_origin: str | None = None
    # The Tailscale login recorded at ``angelia remote enable`` (filled from that record).
    remote_owner: str | None = None
    idle_timeout_s: float = 30 * 60
    idle_check_interval_s: float = 30.0
    permission_timeout_s: float = 10 * 60
    close_timeout_s: float = 5.0
    # Agent processes running at once, server-wide (each is a CLI with its own memory and
    # model requests); a start beyond it is refused (``angelia serve --max-agents``).
    max_agents: int = Field(default=16, ge=1, le=1000)
    # Per close step of each backend when the server stops; keeps Ctrl-C under 3 s.
    shutdown_grace_s: float = 0.5
    # How long an open page keeps trying to reach a server that went away without saying
    # it stops, before it goes quiet (docs/security.md). Tests shorten it.
    reconnect_give_up_s: float = 30.0
    # Where Claude Code keeps its transcripts; None = ${CLAUDE_CONFIG_DIR:-~/.claude}/projects.
    claude_projects_dir: Path | None = None

    @property
    def db_path(self) -> Path:
        return self.data_dir / "angelia.db"

    @property
    def public_url(self) -> str:
        """Where this server answers, without the token (IPv6 literals in brackets)."""
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}/"

    @property
    def token_path(self) -> Path:
        return self.data_dir / "token"

    @property
    def loopback_path(self) -> Path:
        return self.data_dir / "loopback-address"

    def host_allowed(self, host_header: str) -> bool:
        """True if a request's Host header names this server (DNS-rebinding guard)."""
        name = host_name(host_header)
        if name is None:
            return False
        own = {host_name(h) for h in (self.host, *self.allowed_hosts)}
        return name in LOOPBACK_HOSTS or name in own


def host_name(host_header: str) -> str | None:
    """The name part of a Host header, lower-case, IPv6 in brackets; None if malformed.

    Strict on purpose: ``[::1].evil.com`` or ``[::1]x`` is not ``[::1]`` with junk after
    it but a name this server does not have.
    """
    host = host_header.strip().lower()
    if host.startswith("[") or host.count(":") > 1:
        inner, close, rest = host.removeprefix("[").partition("]")
        if not host.startswith("["):
            inner, close, rest = host, "]", ""  # a bare IPv6 address (an --allow-remote bind)
        try:
            address = ipaddress.IPv6Address(inner)
        except ValueError:
            return None
        if not close or (rest and not (rest[0] == ":" and _PORT.fullmatch(rest[1:]))):
            return None
        return f"[{address.compressed}]"
    name, colon, port = host.partition(":")
    if not name or (colon and not _PORT.fullmatch(port)):
        return None
    return name


def install_loopback(data_dir: Path) -> str:
    """This install's own loopback address, 127.a.b.c, chosen once and kept in the data dir.

    A browser keeps cookies per host name, not per port: on an address of its own,
    Angelia's sign-in cookie is never sent to the other servers on 127.0.0.1.
    """
    path = data_dir / "loopback-address"
    try:
        stored = path.read_text().strip()
    except FileNotFoundError:
        stored = ""
    if _own_loopback(stored):
        return stored
    address = "127." + ".".join(str(1 + secrets.randbelow(254)) for _ in range(3))
    make_private_dir(path.parent)
    create_private_file(path)
    path.write_text(address + "\n")
    return address


def _own_loopback(text: str) -> bool:
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError:
        return False
    octets = address.packed
    return octets[0] == 127 and all(0 < o < 255 for o in octets[1:]) and text != "127.0.0.1"


def can_bind(host: str) -> bool:
    """True if a socket can listen on ``host`` (macOS routes only 127.0.0.1 by default)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
    except OSError:
        return False
    return True
