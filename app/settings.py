"""All settings in one place (environment variables prefixed ``ANGELIA_``)."""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


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
    idle_timeout_s: float = 30 * 60
    idle_check_interval_s: float = 30.0
    permission_timeout_s: float = 10 * 60
    close_timeout_s: float = 5.0
    # Per close step of each backend when the server stops; keeps Ctrl-C under 3 s.
    shutdown_grace_s: float = 0.5
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

    def host_allowed(self, host_header: str) -> bool:
        """True if a request's Host header names this server (DNS-rebinding guard)."""
        host = host_header.strip().lower()
        if host.startswith("["):
            name = host.split("]", 1)[0] + "]"
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return name in LOOPBACK_HOSTS or name in {h.lower() for h in self.allowed_hosts}
