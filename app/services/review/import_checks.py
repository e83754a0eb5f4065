"""What an imported session export must satisfy before anything of it is stored.

The profile is checked by the API's own ``ProfileCreate`` and its backend's limits;
every number is bounded (a count or cost the database, the usage sums and a browser
can all hold), dates lie between 2000 and a day from now, event kinds are names. What
the import changes rather than refuses is returned as ``Change``s.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from app.brains import get_brain_class
from app.errors import ValidationFailed
from app.schemas import PermissionMode, ProfileCreate
from app.services.review.exporter import FORMAT
from app.services.store.store import enforcement_problems

BYPASS = "bypassPermissions"
# Far beyond any real session, far inside SQLite's 64-bit integers and a browser's 2**53.
COUNT_MAX = 10**12
COST_MAX = 10_000_000.0
SEQ_MAX = 10**9
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# Another machine's clock may run ahead of this one.
CLOCK_SKEW = timedelta(days=1)
# The profile fields an import takes; command, env and MCP servers are never taken.
PROFILE_FIELDS = (
    "name",
    "backend",
    "cwd",
    "model",
    "permission_mode",
    "allowed_tools",
    "disallowed_tools",
    "permission_timeout_s",
    "idle_timeout_s",
    "reasoning_effort",
)
# Claude Code names its sessions with UUIDs; ACP agents' ids are opaque tokens (UUIDs,
# OpenCode's ses_…). Neither ever holds a path separator, a glob character or a space.
_CLAUDE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}")
# Errors in these places mean the file is something else altogether.
_NOT_AN_EXPORT = {"missing", "model_type", "dict_type", "list_type", "model_attributes_type"}

Count = Annotated[int, Field(ge=0, le=COUNT_MAX)]
Cost = Annotated[float, Field(ge=0, le=COST_MAX, allow_inf_nan=False)]


class Change(BaseModel):
    """One thing the import changed or left out, and why."""

    field: str
    message: str


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    backend: str = Field(min_length=1, max_length=100)
    backend_session_id: str | None = None
    title: str = Field(default="", max_length=300)
    cost_usd: Cost = 0.0
    input_tokens: Count = 0
    output_tokens: Count = 0
    turns: Count = 0
    permission_mode: PermissionMode | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @field_validator("created_at", "updated_at")
    @classmethod
    def _when(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return None
        moment = v if v.tzinfo else v.replace(tzinfo=UTC)
        latest = datetime.now(UTC) + CLOCK_SKEW
        if not EARLIEST <= moment <= latest:
            raise ValueError(f"must lie between {EARLIEST:%Y-%m-%d} and {latest:%Y-%m-%d}")
        return moment.astimezone(UTC)

    @model_validator(mode="after")
    def _in_order(self) -> SessionIn:
        if self.created_at and self.updated_at and self.updated_at < self.created_at:
            raise ValueError("updated_at is before created_at")
        return self


class _TurnFigures(BaseModel):
    """The figures of a ``turn_end`` that the usage page adds up."""

    model_config = ConfigDict(extra="ignore")

    cost_usd: Cost | None = None
    duration_ms: Annotated[float, Field(ge=0, le=COUNT_MAX, allow_inf_nan=False)] | None = None
    usage: dict[str, Any] = Field(default_factory=dict)

    @field_validator("usage")
    @classmethod
    def _counts(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name, value in v.items():
            if isinstance(value, int | float) and not 0 <= value <= COUNT_MAX:
                raise ValueError(f"{name} must lie between 0 and {COUNT_MAX:,}")
        return v


class EventIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    seq: int = Field(ge=1, le=SEQ_MAX)
    kind: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")

    @model_validator(mode="after")
    def _figures(self) -> EventIn:
        if self.kind == "turn_end":
            try:
                _TurnFigures.model_validate(self.model_extra or {})
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"{where}: {_message(first)}") from None
        return self


class ExportIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    session: SessionIn
    profile: dict[str, Any]
    events: list[EventIn]


def read_export(document: Any) -> ExportIn:
    """The document as an export; ValidationFailed names the first thing wrong."""
    if isinstance(document, dict) and document.get("format", FORMAT) != FORMAT:
        raise ValidationFailed("file", f"unsupported export format {document.get('format')!r}")
    try:
        doc = ExportIn.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if len(first["loc"]) <= 1 and first["type"] in _NOT_AN_EXPORT:
            raise ValidationFailed(
                "file", f"not an Angelia session export ({where or 'the file'}: {first['msg']})"
            ) from None
        raise ValidationFailed(where, _message(first)) from None
    if len({e.seq for e in doc.events}) != len(doc.events):
        raise ValidationFailed("events", "the export lists an event sequence number twice")
    return doc


def new_profile(doc: ExportIn, changes: list[Change]) -> ProfileCreate:
    """The export's profile as the API would take it: no command, env or MCP servers,
    and not ``bypassPermissions``."""
    data = {k: doc.profile[k] for k in PROFILE_FIELDS if k in doc.profile}
    data.setdefault("name", "session")
    if data.get("backend") is None:
        data["backend"] = doc.session.backend
    if data.get("permission_mode") == BYPASS:
        data["permission_mode"] = "default"
        changes.append(
            Change(
                field="profile.permission_mode",
                message="The profile's permission mode was bypassPermissions, which runs "
                "every tool without asking; the new profile asks as in default. Change it "
                "on the profile's page if you mean it.",
            )
        )
    try:
        return ProfileCreate.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("profile", *first["loc"]))
        raise ValidationFailed(where, _message(first)) from None


def check_new_profile(data: ProfileCreate) -> None:
    """Refuse a profile its backend cannot enforce, as creating it through the API would."""
    problems = enforcement_problems(
        data.backend,
        mcp_servers={},
        allowed_tools=data.allowed_tools,
        disallowed_tools=data.disallowed_tools,
        command=None,
        permission_mode=data.permission_mode,
        reasoning_effort=data.reasoning_effort,
    )
    for name, message in problems.items():
        if name == "command":
            message += (
                f". An import never brings a command: create a profile for {data.cwd} with "
                "its command first, then import again, and the session joins it"
            )
        raise ValidationFailed(f"profile.{name}", message)


def check_session(doc: ExportIn, backend: str) -> list[Change]:
    """Fit the session to its profile's backend; what was changed, in words."""
    s = doc.session
    changes: list[Change] = []
    if s.backend != backend:
        raise ValidationFailed(
            "session.backend", f"{s.backend!r} is not the profile's backend {backend!r}"
        )
    brain = get_brain_class(backend)
    if s.permission_mode == BYPASS:
        s.permission_mode = "default"
        changes.append(
            Change(
                field="session.permission_mode",
                message="The session's permission mode was bypassPermissions, which runs "
                "every tool without asking; it comes in as default. Switch it on the "
                "session's page if you mean it.",
            )
        )
    elif s.permission_mode is not None and s.permission_mode not in brain.permission_modes:
        raise ValidationFailed(
            "session.permission_mode",
            f"{brain.label} has no {s.permission_mode!r} mode; its modes: "
            f"{', '.join(brain.permission_modes)}",
        )
    shape = _CLAUDE_ID if backend == "claude" else _AGENT_ID
    if s.backend_session_id is not None and not shape.fullmatch(s.backend_session_id):
        shown = s.backend_session_id[:60] + ("…" if len(s.backend_session_id) > 60 else "")
        s.backend_session_id = None
        changes.append(
            Change(
                field="session.backend_session_id",
                message=f"{shown!r} is not a {brain.label} session id, so it was dropped: the "
                "next message starts a new conversation, which does not know the imported one.",
            )
        )
    return changes


def _message(error: Any) -> str:
    return str(error.get("msg", "is not valid")).removeprefix("Value error, ")
