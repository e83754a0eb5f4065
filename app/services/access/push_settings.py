"""What Web Push does, from the environment (``ANGELIA_PUSH_*``).

Each kind of notification can be switched off on its own; the VAPID subject is the
contact a push service (Apple's above all) requires, and the endpoint allowlist names
push services besides the well-known ones (a self-hosted one, or a test's).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PushSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ANGELIA_PUSH_", extra="ignore")

    # The VAPID "sub" claim: a mailto: address (or an https: URL) the push service may
    # write to. Empty: the app's remote origin (app/settings.py) as https://<host>, else no
    # push is sent at all.
    subject: str = ""
    # Origins (scheme://host[:port], separated by spaces or commas) accepted as push
    # endpoints besides the known push services; http is allowed only for these.
    endpoints: str = ""
    # Which events send a push.
    approvals: bool = True
    questions: bool = True
    turns: bool = True
    continues: bool = True
    # How long the push service keeps a message for a phone that is off (seconds).
    ttl_s: int = Field(default=3600, ge=1, le=28 * 24 * 3600)
    # The longest wait a 429 or 5xx answer's Retry-After may ask before the one retry.
    retry_cap_s: float = Field(default=60.0, ge=0)
    # One POST to a push service, at most.
    timeout_s: float = Field(default=10.0, gt=0)

    @property
    def endpoint_origins(self) -> frozenset[str]:
        parts = self.endpoints.replace(",", " ").split()
        return frozenset(p.rstrip("/").lower() for p in parts)
