"""Grok Build (xAI's ``grok`` CLI) over ACP: ``grok [--permission-mode X] agent … stdio``.

What sets it apart from the generic ACP brain (ADR 0007): the permission mode, model and
reasoning effort are command-line flags, and ``bypassPermissions`` is
``--always-approve`` rather than a mode; a session is reopened with ``session/load``;
and text streamed before a tool call is shown as its own message first, as grok's
own UI does, instead of being merged with the text after the tool.
"""

from __future__ import annotations

from app.brains import register
from app.brains.acp import AcpBrain
from app.brains.base import BrainFacts, Capability

__all__ = ["GrokBrain"]

# The mode grok starts in without a flag, so it is not passed.
_DEFAULT_MODE = "default"


@register
class GrokBrain(AcpBrain):
    """Grok Build driven over ACP on stdio."""

    name = "grok"
    label = "Grok Build"
    executable = "grok"
    install_hint = (
        "Install Grok Build with xAI's installer script (it puts grok in ~/.grok/bin), "
        "then run `grok login` or set XAI_API_KEY in the profile's environment."
    )
    instructions_file = "CLAUDE.md"
    facts = BrainFacts(
        resume="session/new returns the id; a later process reopens it with session/load "
        "(capability loadSession), whose replayed history is not shown twice.",
        permission_prompt="session/request_permission with allow_once / allow_always / "
        "reject_once options; grok runs commands it deems safe without asking.",
        process_lifetime="`grok agent stdio` serves many turns, one session/prompt each.",
    )
    capabilities = frozenset(
        {
            Capability.DENY_SINGLE_TOOL,
            Capability.PERMISSION_PROMPTS,
            Capability.RESUME,
            Capability.INTERRUPT,
        }
    )
    limits = {
        Capability.PER_SESSION_MCP: "it is not known to use MCP servers passed per session "
        "(it reads its own and Claude's settings)",
        Capability.SET_MODE_MID_SESSION: "its permission mode is a command-line flag",
    }
    quirks = (
        "Runs commands it deems safe (e.g. touch) without asking. Reads CLAUDE.md and the "
        "Claude settings of the project."
    )
    resume_methods = ("load",)
    flush_text_on_tool_call = True
    config_from_profile = False

    def build_argv(self) -> list[str]:
        """``grok [--permission-mode X] agent [-m M] [--reasoning-effort E]``, then
        ``[--always-approve] stdio``."""
        c = self.config
        argv = [*(c.command or (self.executable,))]
        bypass = c.permission_mode == "bypassPermissions"
        if not bypass and c.permission_mode != _DEFAULT_MODE:
            argv += ["--permission-mode", c.permission_mode]
        argv.append("agent")
        if c.model:
            argv += ["-m", c.model]
        if c.reasoning_effort:
            argv += ["--reasoning-effort", c.reasoning_effort]
        if bypass:
            argv.append("--always-approve")
        argv.append("stdio")
        return argv
