"""Request and response shapes of the JSON API, with validation of user input.

Here: sessions, their messages, models, modes and permission decisions. The profile and
rule shapes and their validators live in ``app.profile_schemas``; they are named here as
well, so every shape of the API can be imported from this one module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.nul import Input
from app.profile_schemas import (
    ExecutableIn,
    ExecutablePublic,
    InstructionsIn,
    PermissionMode,
    ProfileCreate,
    ProfileFields,
    ProfilePublic,
    ProfileUpdate,
    RuleIn,
    RulePublic,
    validate_copy_paths,
    validate_mcp_servers,
    validate_rule,
)

__all__ = [
    "Accepted",
    "Decision",
    "DecisionIn",
    "ExecutableIn",
    "ExecutablePublic",
    "ImageIn",
    "InstructionsIn",
    "MessageIn",
    "ModeIn",
    "ModelChoice",
    "ModelIn",
    "ModelsPublic",
    "PermissionMode",
    "PermissionPublic",
    "ProfileCreate",
    "ProfileFields",
    "ProfilePublic",
    "ProfileUpdate",
    "QueuedEdit",
    "QueuedPublic",
    "RewindIn",
    "RewindPublic",
    "RuleIn",
    "RulePublic",
    "SessionCreate",
    "SessionPublic",
    "SessionUpdate",
    "WorktreePublic",
    "validate_copy_paths",
    "validate_mcp_servers",
    "validate_rule",
]


def _not_blank(v: str, reason: str) -> str:
    if not v.strip():
        raise ValueError(reason)
    return v


class ModeIn(Input):
    model_config = ConfigDict(extra="forbid")

    mode: PermissionMode
    confirm: bool = False


class ModelIn(Input):
    model_config = ConfigDict(extra="forbid")

    # Parentheses: Qwen Code's model ids are "<id>(<auth type>)".
    model: str = Field(
        min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/\[\]()@-]*$"
    )


class ModelChoice(BaseModel):
    id: str
    label: str
    description: str = ""


class ModelsPublic(BaseModel):
    current: str
    models: list[ModelChoice]


class SessionCreate(Input):
    model_config = ConfigDict(extra="forbid")

    profile_id: str
    title: str | None = Field(default=None, max_length=300)
    # A git worktree of its own for the session (None: as the profile says), made from
    # ``base`` (default: the folder's current branch).
    worktree: bool | None = None
    base: str | None = Field(default=None, min_length=1, max_length=250)


class WorktreePublic(BaseModel):
    path: str
    branch: str
    base: str
    base_commit: str


class WorktreeClosedPublic(BaseModel):
    """A session whose worktree is gone: read-only, nothing of it runs again."""

    # "discarded", "cleaned_up" (merged into its base, then removed by clean-up), or
    # "removed" (gone before the app recorded how).
    state: str
    at: datetime | None
    branch: str
    base: str | None


class SessionUpdate(Input):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=300)


class SessionPublic(BaseModel):
    id: str
    profile_id: str
    backend: str
    backend_session_id: str | None
    title: str
    status: str
    cost_usd: float
    input_tokens: int
    output_tokens: int
    turns: int
    permission_mode: str | None
    model: str | None = None
    forked_from: str | None = None
    continued_from: str | None = None
    worktree: WorktreePublic | None = None
    worktree_closed: WorktreeClosedPublic | None = None
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _worktree(cls, data: Any) -> Any:
        # A stored session keeps its worktree in four columns; the API shows one object.
        path = getattr(data, "worktree_path", None)
        branch = getattr(data, "worktree_branch", None)
        if branch is None or isinstance(data, dict):
            return data
        fields = {name: getattr(data, name) for name in cls.model_fields if hasattr(data, name)}
        if path is None:
            fields["worktree"] = None
            fields["worktree_closed"] = {
                "state": data.worktree_closed or "removed",
                "at": data.worktree_closed_at,
                "branch": branch,
                "base": data.worktree_base,
            }
            return fields
        fields["worktree"] = {
            "path": path,
            "branch": branch,
            "base": data.worktree_base,
            "base_commit": data.worktree_base_commit,
        }
        return fields


class ImageIn(Input):
    """An attached image: PNG, JPEG, GIF or WebP, base64, at most 5 MB."""

    model_config = ConfigDict(extra="forbid")

    media_type: str = Field(max_length=100)
    data: str = Field(max_length=7_000_000)


class MessageIn(Input):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(default="", max_length=1_000_000)
    images: list[ImageIn] = Field(default_factory=list, max_length=10)

    @model_validator(mode="after")
    def _not_empty(self) -> MessageIn:
        if not self.images:
            _not_blank(self.text, "message is empty")
        return self


class RewindIn(Input):
    model_config = ConfigDict(extra="forbid")

    event_seq: int = Field(ge=1)
    dry_run: bool = False


class RewindPublic(BaseModel):
    event_seq: int
    files: list[str]
    insertions: int
    deletions: int
    dry_run: bool


class QueuedPublic(BaseModel):
    """A message waiting until the agent is free; ``seq`` is its user_message event."""

    seq: int
    text: str
    reason: Literal["turn", "approval"]


class QueuedEdit(Input):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=1_000_000)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        return _not_blank(v, "message is empty; drop it instead")


Decision = Literal["allow_once", "allow_always", "deny", "deny_stop"]


class DecisionIn(Input):
    """A decision; a question's ``answers`` map each question to a label, the user's own
    words or (multiple choice) a list of labels; a plan approval may name the ``mode``
    the session continues in (default: "default")."""

    model_config = ConfigDict(extra="forbid")

    decision: Decision
    message: str | None = Field(default=None, max_length=10_000)
    answers: dict[str, str | list[str]] | None = Field(default=None, max_length=50)
    mode: PermissionMode | None = None


class PermissionPublic(BaseModel):
    id: str
    session_id: str
    tool: str
    input: dict[str, Any]
    options: list[dict[str, Any]]
    title: str
    reason: str
    tool_call_id: str
    kind: Literal["tool", "question", "plan"] = "tool"
    answers: dict[str, str] | None = None
    rule: str | None
    waited_ms: int | None
    status: str
    decision: str | None
    source: str | None
    message: str | None
    created_at: datetime
    decided_at: datetime | None


class Accepted(BaseModel):
    ok: bool = True
    queued: bool = False
