"""The profile form: text fields in, a validated ``ProfileCreate`` or per-field errors out.

Everything the form shows is a string in ``values``; what it could not accept is a
message in ``errors`` under the same field name, so the page can put each message next
to its field and show every other value as it was typed. Secrets never go back into the
page: environment values and MCP ``env``/``headers`` values are shown as ``MASK``, and a
masked value that comes back means "keep the stored one".
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.brains import available_backends
from app.db.models import Profile
from app.schemas import ProfileCreate, validate_rule
from app.services.store.store import enforcement_problems

MASK = "••••"
BYPASS = "bypassPermissions"
BYPASS_WORD = "bypass"
# Only grok's effort flag is offered in the form; other backends take the model's default.
EFFORT_NEED = "reasoning_effort"
MODEL_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "claude": ("sonnet", "opus", "haiku"),
    "claude-acp": ("sonnet", "opus", "haiku"),
    "gemini": ("gemini-2.5-pro", "gemini-2.5-flash"),
}
FIELDS = (
    "name",
    "backend",
    "cwd",
    "model",
    "permission_mode",
    "bypass_confirm",
    "allowed_tools",
    "disallowed_tools",
    "mcp_servers",
    "env",
    "command",
    "reasoning_effort",
    "idle_timeout_s",
    "permission_timeout_s",
    "worktree_default",
    "worktree_copy",
)
FIELD_LABELS = {
    "name": "Name",
    "backend": "Backend",
    "cwd": "Working directory",
    "model": "Model",
    "permission_mode": "Permission mode",
    "bypass_confirm": "Bypass confirmation",
    "allowed_tools": "Allowed tools",
    "disallowed_tools": "Disallowed tools",
    "mcp_servers": "MCP servers",
    "env": "Environment",
    "command": "Command",
    "reasoning_effort": "Reasoning effort",
    "idle_timeout_s": "Idle timeout",
    "permission_timeout_s": "Approval timeout",
    "worktree_default": "A worktree per session",
    "worktree_copy": "Files copied into each worktree",
}
DEFAULT_PERMISSION_TIMEOUT_S = 600
_MCP_SECRET_KEYS = ("env", "headers")
# Form fields a backend only gets if it can enforce them (a capability, or effort).
GATES = {
    "allowed_tools": "permission_prompts",
    "disallowed_tools": "deny_single_tool",
    "mcp_servers": "per_session_mcp",
    "reasoning_effort": EFFORT_NEED,
}
MODE_HELP = {
    "default": "Asks before anything that edits files or runs commands.",
    "acceptEdits": "Edits files without asking; still asks before running commands.",
    "plan": "Reads and plans only; changes nothing.",
    "bypassPermissions": "Runs every tool without asking. Only for folders you can lose.",
    "dontAsk": "Never asks: whatever a rule does not allow is denied.",
}


@dataclass
class ProfileForm:
    """What the form shows: ``values`` per field, ``errors`` per field, ``notes`` per field."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


def backend_choices() -> list[dict[str, Any]]:
    """The backends a profile can use, Claude Code first, with what each can enforce."""
    rows = []
    for name, cls in available_backends().items():
        caps = sorted(str(c) for c in cls.capabilities)
        if not cls.effort_limit:
            caps.append(EFFORT_NEED)
        rows.append(
            {
                "name": name,
                "label": cls.label,
                "caps": caps,
                "modes": list(cls.permission_modes),
                "needs_command": not cls.executable,
                "models": list(MODEL_SUGGESTIONS.get(name, ())),
                "instructions_file": cls.instructions_file,
            }
        )
    return sorted(rows, key=lambda r: (r["name"] != "claude", r["label"].casefold()))


def new_values(backend: str = "claude") -> dict[str, str]:
    values = dict.fromkeys(FIELDS, "")
    values.update(
        backend=backend,
        permission_mode="default",
        permission_timeout_s=str(DEFAULT_PERMISSION_TIMEOUT_S),
    )
    return values


def values_from_profile(profile: Profile) -> dict[str, str]:
    """The form's text for a stored profile, secrets masked."""
    return {
        "name": profile.name,
        "backend": profile.backend,
        "cwd": profile.cwd,
        "model": profile.model or "",
        "permission_mode": profile.permission_mode,
        "bypass_confirm": "",
        "allowed_tools": "\n".join(profile.allowed_tools),
        "disallowed_tools": "\n".join(profile.disallowed_tools),
        "mcp_servers": json.dumps(mask_mcp(profile.mcp_servers), indent=2, ensure_ascii=False)
        if profile.mcp_servers
        else "",
        "env": "".join(f"{name}={MASK}\n" for name in profile.env),
        # One shell-quoted line reads back to exactly the same argv.
        "command": shlex.join(profile.command) if profile.command else "",
        "reasoning_effort": profile.reasoning_effort or "",
        "idle_timeout_s": str(profile.idle_timeout_s) if profile.idle_timeout_s else "",
        "permission_timeout_s": str(profile.permission_timeout_s),
        "worktree_default": "1" if profile.worktree_default else "",
        "worktree_copy": "\n".join(profile.worktree_copy),
    }


def read_form(
    raw: Mapping[str, str],
    *,
    secrets: Profile | None = None,
    backend: str | None = None,
    stored_mode: str | None = None,
) -> tuple[ProfileCreate | None, ProfileForm]:
    """Validate the submitted form.

    ``secrets`` is the profile whose values a masked one keeps (the one being edited or
    duplicated); ``backend`` fixes the backend (an edit cannot change it);
    ``stored_mode`` is the mode already saved, which needs no new bypass confirmation.
    """
    values = {name: str(raw.get(name, "")) for name in FIELDS}
    if backend is not None:
        values["backend"] = backend
    form = ProfileForm(values=values)
    errors = form.errors
    data: dict[str, Any] = {
        "name": values["name"].strip(),
        "backend": values["backend"].strip(),
        "cwd": values["cwd"].strip(),
        "model": values["model"].strip() or None,
        "permission_mode": values["permission_mode"] or "default",
        "reasoning_effort": values["reasoning_effort"] or None,
        "worktree_default": bool(values["worktree_default"]),
        "worktree_copy": [line for _n, line in _lines(values["worktree_copy"])],
    }
    for name in ("allowed_tools", "disallowed_tools"):
        _put(data, errors, name, _rules, values[name])
    _put(data, errors, "mcp_servers", lambda text: _mcp(text, secrets), values["mcp_servers"])
    _put(data, errors, "command", _command, values["command"])
    _put(data, errors, "idle_timeout_s", _seconds, values["idle_timeout_s"])
    _put(data, errors, "permission_timeout_s", _approval_timeout, values["permission_timeout_s"])
    env, env_problems, values["env"], retype = _env(values["env"], secrets.env if secrets else {})
    if env_problems:
        errors["env"] = "; ".join(env_problems)
    else:
        data["env"] = env

    try:
        profile = ProfileCreate.model_validate({k: v for k, v in data.items() if k not in errors})
    except ValidationError as exc:
        profile = None
        for err in exc.errors():
            loc = err.get("loc") or ("name",)
            message = str(err.get("msg", "is not valid")).removeprefix("Value error, ")
            errors.setdefault(str(loc[0]), message)
    if "backend" not in errors:
        _backend_rules(data, values, errors, stored_mode)
    if errors and retype:
        form.notes["env"] = (
            "Values are never sent back to this page: "
            f"type the values of {', '.join(retype)} again."
        )
    return (profile if not errors else None), form


def summary(errors: Mapping[str, str], labels: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(field, label, message) in the order of ``labels``, for the list atop the form."""
    order = list(labels)
    ranked = sorted(errors, key=lambda f: order.index(f) if f in order else len(order))
    return [(f, labels.get(f, f.replace("_", " ").capitalize()), errors[f]) for f in ranked]


def mask_mcp(servers: Mapping[str, Any]) -> dict[str, Any]:
    masked = copy.deepcopy(dict(servers))
    for spec in masked.values():
        if isinstance(spec, dict):
            for key in _MCP_SECRET_KEYS:
                if isinstance(spec.get(key), dict):
                    spec[key] = dict.fromkeys(spec[key], MASK)
    return masked


# -- one field each ---------------------------------------------------------------------


def _put(
    data: dict[str, Any],
    errors: dict[str, str],
    name: str,
    parse: Callable[[str], Any],
    text: str,
) -> None:
    try:
        data[name] = parse(text)
    except ValueError as exc:
        errors[name] = str(exc)


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _rules(text: str) -> list[str]:
    rules, problems = [], []
    for n, line in _lines(text):
        try:
            rules.append(validate_rule(line))
        except ValueError as exc:
            problems.append(f"line {n}: {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    return rules


def _mcp(text: str, stored: Profile | None) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        servers = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(servers, dict):
        raise ValueError('must be a JSON object: {"name": {"command": …}, …}')
    known = stored.mcp_servers if stored else {}
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            continue  # the schema says what is wrong with it
        for key in _MCP_SECRET_KEYS:
            table = spec.get(key)
            if not isinstance(table, dict):
                continue
            for item, value in table.items():
                if value != MASK:
                    continue
                old = (known.get(name) or {}).get(key) or {}
                if not isinstance(old, dict) or not isinstance(old.get(item), str):
                    raise ValueError(
                        f"server {name!r}: {key}.{item} has no stored value to keep; type it"
                    )
                table[item] = old[item]
    return servers


def _command(text: str) -> list[str] | None:
    lines = [line for _, line in _lines(text)]
    if not lines:
        return None
    if len(lines) > 1:
        return lines  # one argument per line, taken literally
    try:
        argv = shlex.split(lines[0])
    except ValueError as exc:
        raise ValueError(f"cannot split it like a shell would: {exc}") from None
    return argv or None


def _seconds(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError("must be a whole number of seconds") from None


def _approval_timeout(text: str) -> int:
    # Empty means the default; waiting for ever has to be asked for with 0.
    seconds = _seconds(text)
    return DEFAULT_PERMISSION_TIMEOUT_S if seconds is None else seconds


def _env(text: str, stored: Mapping[str, str]) -> tuple[dict[str, str], list[str], str, list[str]]:
    """(env, problems, text to show again, names whose typed value must be typed again)."""
    env: dict[str, str] = {}
    problems: list[str] = []
    shown: list[str] = []
    retype: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name:
            problems.append(
                f"line {n} is not NAME=value (it is not shown again: it may hold a secret)"
            )
            continue
        value = value.rstrip("\r")
        if value.strip() == MASK:
            if name in stored:
                env[name] = stored[name]
                shown.append(f"{name}={MASK}")
            else:
                problems.append(f"{name} has no stored value to keep; type its value")
                shown.append(f"{name}=")
            continue
        env[name] = value
        shown.append(f"{name}=")
        if value:
            retype.append(name)
    return env, problems, "".join(f"{line}\n" for line in shown), retype


def _backend_rules(
    data: dict[str, Any],
    values: dict[str, str],
    errors: dict[str, str],
    stored_mode: str | None,
) -> None:
    """What the chosen backend adds: its modes, its capabilities, a command if it has none."""
    backend = data["backend"]
    cls = available_backends()[backend]
    mode = data["permission_mode"]
    if "permission_mode" not in errors and mode not in cls.permission_modes:
        errors["permission_mode"] = f"{cls.label} has no {mode!r} mode"
    if mode == BYPASS and stored_mode != BYPASS and values["bypass_confirm"].strip() != BYPASS_WORD:
        errors["bypass_confirm"] = (
            f'Type "{BYPASS_WORD}" to confirm: in this mode every tool runs without asking.'
        )
    problems = enforcement_problems(
        backend,
        mcp_servers=data.get("mcp_servers") or {},
        allowed_tools=data.get("allowed_tools") or [],
        disallowed_tools=data.get("disallowed_tools") or [],
        command=data.get("command"),
        reasoning_effort=data.get("reasoning_effort"),
    )
    for name, message in problems.items():
        errors.setdefault(name, message)
