"""The user's own Codex setup (their ``CODEX_HOME``, ``~/.codex`` unless set) as a session
of the app sees it: their ``config.toml`` under the app's settings, and their login.

Nothing here writes into the user's Codex home. The session's home gets:

- a ``config.toml`` built at each start from the user's (model providers, model, profiles,
  MCP servers, trusted projects…) with the profile's settings laid over it;
- ``auth.json`` as a symbolic link to the user's own. Codex (0.166) reads the file through
  it, and when it refreshes a ChatGPT token it rewrites the file in place (open, truncate,
  write), so the new tokens land in the user's file, where their terminal codex finds them
  (it reloads the file before refreshing, as two terminal codexes sharing one home do). A
  copy would let a session spend the refresh token the user's file still holds, which
  logs their terminal codex out (measured: docs/backends.md). An API-key login is only
  read. Codex's logout removes the link, not the file.
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.brains.acp.agents.toml_text import dumps

__all__ = [
    "BASE_URL_VAR",
    "LOGIN_VAR",
    "describe_login",
    "link_login",
    "read_user_config",
    "session_config",
    "shown",
    "user_codex_home",
]

# Profile env: an OpenAI Responses-compatible endpoint of the profile's own.
BASE_URL_VAR = "ANGELIA_CODEX_BASE_URL"
# Profile env: "none" keeps the user's own login out of the profile's sessions.
LOGIN_VAR = "ANGELIA_CODEX_LOGIN"
# Variables Codex takes an API key from, before any login.
KEY_VARS = ("CODEX_API_KEY", "OPENAI_API_KEY")


def user_codex_home(env: Mapping[str, str]) -> Path:
    """The Codex home a terminal codex would use with the profile's ``env`` over the
    app's: ``$CODEX_HOME``, else ``$HOME/.codex``."""
    merged = {**os.environ, **env}
    if merged.get("CODEX_HOME"):
        return Path(os.path.abspath(Path(merged["CODEX_HOME"]).expanduser()))
    return Path(os.path.abspath(Path(merged.get("HOME") or Path.home()) / ".codex"))


def shown(path: Path, env: Mapping[str, str]) -> str:
    """``path`` for a page: under the home folder written with ``~``."""
    home = {**os.environ, **env}.get("HOME") or str(Path.home())
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def read_user_config(home: Path) -> dict[str, Any]:
    """The user's ``config.toml`` as data ({} when there is none).

    Raises:
        OSError: It exists but cannot be read.
        ValueError: It is not valid TOML (the user's codex would refuse it too).
    """
    path = home / "config.toml"
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"Your Codex config {path} is not valid TOML: {exc}") from None


def link_login(session_home: Path, user_home: Path, *, use: bool) -> None:
    """Make the session's ``auth.json`` a link to the user's (none when ``use`` is False
    or the user has none), replacing whatever an earlier start left there."""
    own = user_home / "auth.json"
    link = session_home / "auth.json"
    if link.is_symlink() or link.exists():
        link.unlink()
    if use and own.is_file():
        link.symlink_to(own)


def session_config(user: Mapping[str, Any], app: Mapping[str, Any], header: str) -> str:
    """The session's ``config.toml``: the user's settings, the app's ``app`` over them
    (a top-level key replaces the user's, ``model_providers`` and ``mcp_servers`` entries
    are added by name), and Codex told to keep a login in this file only.

    Raises:
        ValueError: The result cannot be written as TOML.
    """
    doc = copy.deepcopy(dict(user))
    for key, value in app.items():
        if key in ("model_providers", "mcp_servers"):
            doc[key] = {**(doc.get(key) or {}), **value}
        else:
            doc[key] = value
    # With the keyring, Codex keys a login by its home's path and deletes auth.json after
    # saving there: a refresh would leave the user's file with a spent token.
    doc["cli_auth_credentials_store"] = "file"
    return header + dumps(doc)


def describe_login(env: Mapping[str, str]) -> str:
    """Which login a Codex profile with ``env`` uses, in one sentence without secrets."""
    if env.get(BASE_URL_VAR):
        return f"Uses the model provider this profile sets ({BASE_URL_VAR}), not your Codex login."
    keys = [k for k in KEY_VARS if env.get(k)]
    if keys:
        return f"Uses the API key in this profile's environment ({keys[0]})."
    home = user_codex_home(env)
    if env.get(LOGIN_VAR) == "none":
        return (
            f"Does not use your Codex login ({LOGIN_VAR}=none): put CODEX_API_KEY in this "
            "profile's environment or set a provider."
        )
    try:
        config = read_user_config(home)
    except (OSError, ValueError) as exc:
        return f"Your Codex settings cannot be read: {exc}"
    provider = _own_provider(config)
    if provider:
        return f"Uses the model provider “{provider}” from your {shown(home, env)}/config.toml."
    return _auth_file(home, env, config)


def _own_provider(config: Mapping[str, Any]) -> str:
    """The user's chosen provider when it brings its own key ("" for OpenAI's login)."""
    name = config.get("model_provider")
    profile = config.get("profile")
    profiles = config.get("profiles")
    if isinstance(profile, str) and isinstance(profiles, dict):
        chosen = profiles.get(profile)
        if isinstance(chosen, dict) and isinstance(chosen.get("model_provider"), str):
            name = chosen["model_provider"]
    if not isinstance(name, str) or name == "openai":
        return ""
    entry = (config.get("model_providers") or {}).get(name)
    if isinstance(entry, dict) and entry.get("requires_openai_auth"):
        return ""
    return name


def _auth_file(home: Path, env: Mapping[str, str], config: Mapping[str, Any]) -> str:
    path = home / "auth.json"
    where = shown(path, env)
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        if config.get("cli_auth_credentials_store") in ("keyring", "auto"):
            return (
                "Your Codex login may be in the system keyring, which Codex keys by its "
                "folder, so Angelia's sessions cannot use it: set "
                'cli_auth_credentials_store = "file" and run `codex login` again, or put '
                "CODEX_API_KEY in this profile's environment."
            )
        return (
            f"No Codex login found ({where}): run `codex login`, or put CODEX_API_KEY in "
            "this profile's environment."
        )
    except (OSError, ValueError):
        return f"Your Codex login at {where} cannot be read: run `codex login` again."
    if not isinstance(data, dict):
        return f"Your Codex login at {where} cannot be read: run `codex login` again."
    mode = data.get("auth_mode")
    if data.get("OPENAI_API_KEY") and mode in (None, "apikey", "apiKey"):
        return f"Uses your Codex login (API key in {where})."
    if isinstance(data.get("tokens"), dict):
        return (
            f"Uses your Codex login (ChatGPT login in {where}; when Codex refreshes its "
            "token, it writes the new one there, as a second codex in a terminal would)."
        )
    return f"Uses your Codex login ({where})."
