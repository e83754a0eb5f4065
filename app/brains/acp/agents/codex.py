"""Codex (OpenAI's ``codex``) over ACP through ``codex-acp`` (``@agentclientprotocol/codex-acp``),
which runs ``codex app-server`` as its child.

What the real adapter (2.6.0, codex 0.166) does, and so what this brain does
(docs/backends.md):

- Codex keeps everything in ``CODEX_HOME``: its ``config.toml``, the sessions a later
  process resumes, and the command prefixes "allow always" saves in ``rules/``, which apply
  to every session sharing that home. Each chat session gets its own home under the app's
  data folder (``BrainConfig.state_dir``), so an allow-always stays in its session. Its
  ``config.toml`` is built at each start from the user's own (``codex_user``) with the
  profile's settings over it: the model, and a model provider when the profile's env
  names one (``ANGELIA_CODEX_BASE_URL``). Its ``auth.json`` is a link to the user's login
  (not a copy: see ``codex_user``) unless the profile says ``ANGELIA_CODEX_LOGIN=none``.
  Nothing is written into the user's own Codex home.
- Codex runs commands inside its own sandbox without asking; it asks only for escalations
  and for writes outside its writable roots. The app's permission modes are Codex's sandbox
  modes: ``default`` → ``workspace-write``, ``plan`` → ``read-only``,
  ``bypassPermissions`` → ``agent-full-access``. Its default ``agent`` mode sends risky
  calls to a second model call instead of the user, so it is never left on.
- Because ordinary commands and edits are never asked about, the app cannot keep a deny
  rule or an allowed list by answering questions. Codex's own exec policy keeps one kind:
  a profile's ``Bash(<prefix>:*)`` deny rules are written into the session's rules file
  as ``forbidden`` prefixes at each start (``codex_rules``). Every other deny rule, deny
  rules stored apart from the profile's list, and allowed lists are refused.
- A profile's MCP servers go to codex-acp with the session; Codex offers their tools only
  through its ``tool_search`` tool, and asks before each call (not in full access, where
  it calls them unasked). Such a call comes as a command titled ``mcp.<server>.<tool>``;
  it is named ``mcp__<server>__<tool>`` here so the app's MCP rules apply to it. Because
  full access asks nothing, a profile's MCP deny rules are kept by Codex itself in every
  mode: a server denied whole is not given to Codex at all, and a server with denied tools
  goes into ``config.toml`` with them as its ``disabled_tools`` instead of to codex-acp.
  Stored MCP deny rules would reach neither at start, so they are refused.
- A tool call sometimes gets no final update: open calls are closed when the turn ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from app.brains import register
from app.brains.acp.agents.codex_rules import (
    deny_refusal,
    forbidden_prefix,
    mcp_denials,
    mcp_entry,
    write_rules,
)
from app.brains.acp.agents.codex_user import (
    BASE_URL_VAR,
    LOGIN_VAR,
    describe_login,
    link_login,
    read_user_config,
    session_config,
    user_codex_home,
)
from app.brains.acp.brain import AcpBrain
from app.brains.base import BrainConfig, BrainFacts, Capability
from app.brains.events import BrainEvent, PermissionAsked, ToolCall
from app.brains.private_files import write_private
from app.errors import BrainStartError

__all__ = ["BASE_URL_VAR", "KEY_VAR", "LOGIN_VAR", "CodexBrain", "codex_config", "mcp_named"]

# Profile env: the variable holding the key of the profile's own provider (BASE_URL_VAR).
KEY_VAR = "ANGELIA_CODEX_API_KEY"
PROVIDER = "angelia"


@register
class CodexBrain(AcpBrain):
    """Codex driven over ACP by codex-acp, with a home of its own per session."""

    name = "codex"
    label = "Codex"
    executable = "codex-acp"
    install_hint = (
        "npm i -g @agentclientprotocol/codex-acp@2.6.0 (it brings its own codex; uses your "
        "codex login and ~/.codex/config.toml, or CODEX_API_KEY in the profile's env)"
    )
    install_command = "npm i -g @agentclientprotocol/codex-acp@2.6.0"
    install_note = (
        "It brings its own codex. Uses your own login (`codex login`) and "
        "~/.codex/config.toml, or CODEX_API_KEY / OPENAI_API_KEY in the profile's env."
    )
    instructions_file = "AGENTS.md"
    facts = BrainFacts(
        resume="session/new returns the id; a later process reopens it with session/resume "
        "(session/load also works), from the session's own CODEX_HOME under the data folder.",
        permission_prompt="session/request_permission only for commands the model wants "
        "run outside the sandbox and writes outside the writable roots (allow once / allow "
        "always / reject); everything else runs in Codex's sandbox unasked. A reject ends "
        "the turn (cancelled).",
        process_lifetime="One codex-acp process (with its codex app-server child) per chat "
        "session serving many turns; session/cancel stops a turn.",
    )
    capabilities = frozenset(
        {
            Capability.RESUME,
            Capability.SET_MODE_MID_SESSION,
            Capability.INTERRUPT,
            Capability.DENY_SINGLE_TOOL,
            Capability.PER_SESSION_MCP,
        }
    )
    limits = {
        Capability.PERMISSION_PROMPTS: "Codex asks only before leaving its sandbox or "
        "writing outside its writable roots, so the tools outside an allowed list would "
        "still run unasked",
    }
    permission_modes = ("default", "plan", "bypassPermissions")
    mode_map: ClassVar[dict[str, str]] = {
        "default": "workspace-write",
        "plan": "read-only",
        "bypassPermissions": "agent-full-access",
    }
    default_argv = ("codex-acp",)
    catalog_env: ClassVar[dict[str, str]] = {"NO_BROWSER": "1"}
    quirks = (
        "Runs commands in its own sandbox without asking; asks only before escalating out "
        "of it or writing outside the writable roots (which include /tmp). Each session "
        "has its own CODEX_HOME in Angelia's data folder."
    )
    # Everything but escalations and writes outside the roots runs unasked, so an app
    # rule denying any of these could never be applied (the rules API refuses them).
    runs_unasked: ClassVar[frozenset[str]] = frozenset(
        {"Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "Read", "LS", "Grep", "Glob"}
        | {"WebSearch", "WebFetch", "TodoWrite"}
    )
    keeps_state = True
    close_open_tools = True

    def __init__(self, config: BrainConfig) -> None:
        servers = config.mcp_servers
        whole, disabled = mcp_denials(config.disallowed_tools, servers)
        # A server denied whole never reaches Codex. One with denied tools is given to Codex
        # in config.toml, where it can carry them; codex-acp's entries cannot.
        self._config_mcp = {name: (servers[name], tools) for name, tools in disabled.items()}
        kept = {n: s for n, s in servers.items() if n not in whole and n not in disabled}
        super().__init__(replace(config, mcp_servers=kept))

    @classmethod
    def deny_refusal(cls, rule: str, tool: str, *, in_profile: bool) -> str | None:
        mcp = tool.startswith("mcp__")
        if not in_profile and (mcp or forbidden_prefix(rule) is not None):
            # Stored rules do not reach Codex's start; the profile's list does. Full access
            # calls MCP tools unasked, so an answer could not keep an MCP rule either.
            where = "its config" if mcp else "its rules file"
            return (
                f"{cls.label} keeps a deny rule only from the profile's disallowed tools, "
                f"written into {where} at each start: add {rule} there instead."
            )
        if mcp and rule != tool:
            return (
                f"{cls.label} can turn off an MCP tool or server only as a whole, as "
                f"{tool}; {rule} is not such a rule, so it is not accepted."
            )
        return deny_refusal(rule, tool, cls.label, cls.runs_unasked)

    def _emit(self, event: BrainEvent) -> None:
        super()._emit(mcp_named(event))

    @classmethod
    def login_note(cls, env: Mapping[str, str]) -> str:
        return describe_login(env)

    def launch_env(self) -> dict[str, str]:
        env = super().launch_env()
        if self.config.state_dir is None:
            if self.config.disallowed_tools:
                # Deny rules live in the home's rules file: never start without them.
                raise BrainStartError("Codex needs a folder of its own to keep deny rules in.")
            return env  # No folder of the app's: Codex uses its own home.
        home = Path(self.config.state_dir)
        own = user_codex_home(env)
        try:
            user = read_user_config(own)
        except (OSError, ValueError) as exc:
            raise BrainStartError(f"Could not read your Codex settings: {exc}") from None
        text = codex_config(
            self.config.model, env, self._config_mcp, user, self.config.disallowed_tools
        )
        try:
            home.mkdir(parents=True, exist_ok=True, mode=0o700)
            config = home / "config.toml"
            # It can hold an MCP server's env or headers (tokens): 0600 from the start.
            config.unlink(missing_ok=True)
            write_private(config, text)
            write_rules(home, self.config.disallowed_tools)
            link_login(home, own, use=env.get(LOGIN_VAR) != "none")
        except OSError as exc:
            raise BrainStartError(f"Could not prepare Codex's folder {home}: {exc}") from None
        return {**env, "CODEX_HOME": str(home)}


def mcp_named(event: BrainEvent) -> BrainEvent:
    """A call of a profile's MCP tool under Claude Code's name for it (``mcp__<server>__<tool>``,
    its arguments as input), so that rules such as ``mcp__mark`` apply to it.

    codex-acp sends such a call as kind ``execute`` titled ``mcp.<server>.<tool>`` with input
    ``{server, tool, arguments}``, which would otherwise read as a shell command.
    """
    if not isinstance(event, ToolCall | PermissionAsked):
        return event
    server, tool = event.input.get("server"), event.input.get("tool")
    if not (isinstance(server, str) and isinstance(tool, str)):
        return event
    if event.title != f"mcp.{server}.{tool}":
        return event
    arguments = event.input.get("arguments")
    return replace(
        event,
        tool=f"mcp__{server}__{tool}",
        input=arguments if isinstance(arguments, dict) else {},
    )


def codex_config(
    model: str | None,
    env: Mapping[str, str],
    mcp: Mapping[str, tuple[Mapping[str, Any], list[str]]] | None = None,
    user: Mapping[str, Any] | None = None,
    disallowed: tuple[str, ...] = (),
) -> str:
    """The session's ``config.toml``: the user's own ``user`` config with the profile's
    settings over it: its model; if its env names one, a Responses-API provider; the MCP
    servers ``mcp`` (entry, tools to disable); and the profile's MCP deny rules
    ``disallowed`` applied to the user's own servers (a server denied whole is left out,
    a denied tool goes into its ``disabled_tools``).

    Raises:
        BrainStartError: The base URL is not an http(s) URL, or an MCP server is malformed.
    """
    own = dict(user or {})
    app: dict[str, Any] = {}
    if model:
        # codex-acp names models "<slug>[<effort>]"; config.toml takes the slug.
        app["model"] = model.split("[", 1)[0]
    base_url = env.get(BASE_URL_VAR, "")
    if base_url:
        if not base_url.startswith(("http://", "https://")):
            raise BrainStartError(
                f"{BASE_URL_VAR} must be an http:// or https:// URL, not {base_url!r}."
            )
        provider: dict[str, Any] = {
            "name": "Angelia profile",
            "base_url": base_url,
            "wire_api": "responses",
        }
        if KEY_VAR in env:
            provider["env_key"] = KEY_VAR
        app["model_provider"] = PROVIDER
        app["model_providers"] = {PROVIDER: provider}
    servers = own.get("mcp_servers")
    if isinstance(servers, dict):
        whole, tools = mcp_denials(disallowed, servers)
        kept = {n: dict(e) for n, e in servers.items() if n not in whole}
        for name, denied in tools.items():
            if isinstance(kept[name], dict):
                listed = kept[name].get("disabled_tools") or []
                kept[name]["disabled_tools"] = sorted({*map(str, listed), *denied})
        own["mcp_servers"] = kept
    try:
        entries = {n: mcp_entry(n, s, t) for n, (s, t) in (mcp or {}).items()}
        if entries:
            app["mcp_servers"] = entries
        header = "# Written by Angelia at each start of this session's Codex, from your own\n"
        header += "# config.toml and the profile; edits here are lost.\n"
        return session_config(own, app, header)
    except ValueError as exc:
        raise BrainStartError(str(exc)) from None
