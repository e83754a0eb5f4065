"""Request and response shapes of the JSON API for profiles and their rules, with the
checks of what a profile may hold: permission rules, files copied into a worktree, MCP
servers, the command and its environment. ``app.schemas`` names them as well."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.brains.base import PERMISSION_MODES
from app.folders import check_folder
from app.nul import Input

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
assert set(PERMISSION_MODES) == {"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"}

# Claude Code's rule syntax: `Tool`, `Tool(specifier)`, or `mcp__server__tool`.
_RULE_RE = re.compile(
    r"^(?P<tool>[A-Za-z][A-Za-z0-9_.-]*)(?:\((?P<spec>[^()]*(?:\([^()]*\))?[^()]*)\))?$"
)
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate_rule(rule: str) -> str:
    """Check one rule string (e.g. ``Bash(git add:*)``); returns it stripped."""
    rule = rule.strip()
    m = _RULE_RE.match(rule)
    if not m:
        raise ValueError(
            f"{rule!r} is not a valid rule; use Tool, Tool(specifier) or mcp__server__tool, "
            "e.g. Bash(git add:*), Edit(src/**), Read"
        )
    if m.group("spec") is not None and not m.group("spec").strip():
        raise ValueError(f"{rule!r} has an empty specifier; drop the parentheses instead")
    return rule


def validate_copy_paths(paths: list[str]) -> list[str]:
    """Files to copy into a new worktree: relative paths that stay inside the repository."""
    if len(paths) > 50:
        raise ValueError("at most 50 files may be copied into a worktree")
    for path in paths:
        parts = path.replace("\\", "/").split("/")
        if not path or len(path) > 500 or "\x00" in path:
            raise ValueError(f"{path!r} is not a file path")
        if path.startswith("/") or ".." in parts or parts[0] == ".git":
            raise ValueError(
                f"{path!r} must be a path relative to the repository, inside it and not in .git"
            )
    return paths


def validate_mcp_servers(servers: dict[str, Any]) -> dict[str, Any]:
    """Check the `.mcp.json` shape: {name: {command, args?, env?} | {type, url, headers?}}."""
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            raise ValueError(f"server {name!r} must be an object")
        kind = spec.get("type", "stdio")
        if kind == "stdio":
            if not isinstance(spec.get("command"), str) or not spec["command"]:
                raise ValueError(f"server {name!r} needs a non-empty string 'command'")
            args = spec.get("args", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ValueError(f"server {name!r}: 'args' must be a list of strings")
            env = spec.get("env", {})
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                raise ValueError(f"server {name!r}: 'env' must map names to strings")
        elif kind in ("http", "sse"):
            url = spec.get("url")
            if not isinstance(url, str) or not re.match(r"^https?://", url):
                raise ValueError(f"server {name!r} needs an http(s) 'url'")
            headers = spec.get("headers", {})
            if not isinstance(headers, dict):
                raise ValueError(f"server {name!r}: 'headers' must be an object")
        else:
            raise ValueError(f"server {name!r}: type must be stdio, http or sse, not {kind!r}")
    return servers


class ProfileFields(Input):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    permission_mode: PermissionMode = "default"
    allowed_tools: list[str] = Field(default_factory=list)
    disallowed_tools: list[str] = Field(default_factory=list)
    mcp_servers: dict[str, Any] = Field(default_factory=dict)
    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    permission_timeout_s: int = Field(default=600, ge=0, le=7 * 24 * 3600)
    idle_timeout_s: int | None = Field(default=None, ge=60, le=7 * 24 * 3600)
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    worktree_default: bool = False
    worktree_copy: list[str] = Field(default_factory=list)

    @field_validator("worktree_copy")
    @classmethod
    def _copy(cls, v: list[str]) -> list[str]:
        return validate_copy_paths(v)

    @field_validator("allowed_tools", "disallowed_tools")
    @classmethod
    def _rules(cls, v: list[str]) -> list[str]:
        return [validate_rule(r) for r in v]

    @field_validator("mcp_servers")
    @classmethod
    def _mcp(cls, v: dict[str, Any]) -> dict[str, Any]:
        return validate_mcp_servers(v)

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not all(isinstance(a, str) and a for a in v)):
            raise ValueError("command must be a non-empty list of non-empty strings")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
        return v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        return (v.strip() or None) if v is not None else None


class ProfileCreate(ProfileFields):
    name: str = Field(min_length=1, max_length=200)
    backend: str
    cwd: str

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, v: str) -> str:
        return check_folder(v)

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        from app.brains import available_backends

        if v == "agy":
            raise ValueError(
                "agy cannot be a backend: headless it cannot deny a single tool, and its MCP "
                "servers are machine-wide, so a profile's capabilities could not be enforced"
            )
        known = available_backends()
        if v not in known:
            raise ValueError(f"unknown backend {v!r}; known: {', '.join(sorted(known))}")
        return v


class ProfileUpdate(Input):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    cwd: str | None = None
    model: str | None = None
    permission_mode: PermissionMode | None = None
    allowed_tools: list[str] | None = None
    disallowed_tools: list[str] | None = None
    mcp_servers: dict[str, Any] | None = None
    command: list[str] | None = None
    env: dict[str, str] | None = None
    permission_timeout_s: int | None = None
    idle_timeout_s: int | None = None
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    worktree_default: bool | None = None
    worktree_copy: list[str] | None = None

    @field_validator(
        "name",
        "cwd",
        "permission_mode",
        "allowed_tools",
        "disallowed_tools",
        "mcp_servers",
        "env",
        "permission_timeout_s",
        "worktree_default",
        "worktree_copy",
        mode="before",
    )
    @classmethod
    def _not_null(cls, v: Any) -> Any:
        # Leaving a field out keeps it; an explicit null cannot be stored for these.
        if v is None:
            raise ValueError("may be left out, but not set to null")
        return v

    @model_validator(mode="after")
    def _validate(self) -> ProfileUpdate:
        data = self.model_dump(exclude_unset=True, exclude={"name", "cwd"})
        # Reuse the create-time rules for every field that is being changed.
        ProfileFields.model_validate(data)
        if self.cwd is not None:
            self.cwd = check_folder(self.cwd)
        return self


class ProfilePublic(BaseModel):
    id: str
    name: str
    backend: str
    cwd: str
    model: str | None
    permission_mode: str
    allowed_tools: list[str]
    disallowed_tools: list[str]
    mcp_servers: dict[str, Any]
    command: list[str] | None
    env: dict[str, str]
    permission_timeout_s: int
    idle_timeout_s: int | None
    reasoning_effort: str | None
    worktree_default: bool = False
    worktree_copy: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime


class RuleIn(Input):
    model_config = ConfigDict(extra="forbid")

    rule: str = Field(max_length=500)
    decision: Literal["allow", "deny"]

    @field_validator("rule")
    @classmethod
    def _rule(cls, v: str) -> str:
        return validate_rule(v)


class RulePublic(BaseModel):
    id: str
    rule: str
    decision: str
    created_at: datetime


class InstructionsIn(Input):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(max_length=256 * 1024)
    overwrite: bool = False


class ExecutableIn(Input):
    """A path typed for an agent installed off PATH, to be checked before a profile uses it."""

    model_config = ConfigDict(extra="forbid")

    path: str


class ExecutablePublic(BaseModel):
    """A checked executable: the path as given and the first line of its ``--version``."""

    path: str
    version: str
