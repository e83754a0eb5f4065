"""Brain registry: backend name → brain class.

Built-in backends register through the same ``register`` call a plugin would use.
"""

from __future__ import annotations

from app.brains.base import Brain, BrainConfig, BrainFacts, Capability, PermissionAnswer
from app.errors import UnknownBackendError

__all__ = [
    "Brain",
    "BrainConfig",
    "BrainFacts",
    "Capability",
    "PermissionAnswer",
    "available_backends",
    "check_profile",
    "get_brain_class",
    "register",
]

_BRAINS: dict[str, type[Brain]] = {}


def register(brain_cls: type[Brain]) -> type[Brain]:
    """Register a brain class under its ``name`` (usable as a decorator)."""
    _BRAINS[brain_cls.name] = brain_cls
    return brain_cls


def get_brain_class(backend: str) -> type[Brain]:
    """The brain class for ``backend``; ``UnknownBackendError`` names the known ones."""
    _load_builtins()
    try:
        return _BRAINS[backend]
    except KeyError:
        known = ", ".join(sorted(_BRAINS)) or "none"
        raise UnknownBackendError(
            f"Unknown backend {backend!r}. Known backends: {known}."
        ) from None


def available_backends() -> dict[str, type[Brain]]:
    _load_builtins()
    return dict(_BRAINS)


# What a profile asks for → the capability that keeps it, and how to say it is missing.
_NEEDS: tuple[tuple[str, Capability, str, str], ...] = (
    (
        "has_mcp_servers",
        Capability.PER_SESSION_MCP,
        "use per-session MCP servers",
        "it takes no MCP servers per session",
    ),
    (
        "has_disallowed_tools",
        Capability.DENY_SINGLE_TOOL,
        "deny single tools",
        "it cannot be told to refuse one tool",
    ),
    (
        "has_allowed_tools",
        Capability.PERMISSION_PROMPTS,
        "ask before tools outside the allowed list",
        "it asks no permission questions",
    ),
)


def check_profile(
    backend: str,
    *,
    has_mcp_servers: bool,
    has_disallowed_tools: bool,
    has_allowed_tools: bool,
) -> list[str]:
    """What ``backend`` cannot enforce of a profile, one sentence each (empty: all of it).

    Raises:
        UnknownBackendError: ``backend`` is not registered.
    """
    brain_cls = get_brain_class(backend)
    asked = {
        "has_mcp_servers": has_mcp_servers,
        "has_disallowed_tools": has_disallowed_tools,
        "has_allowed_tools": has_allowed_tools,
    }
    limits = getattr(brain_cls, "limits", {})
    return [
        f"{brain_cls.label} cannot {what}: {limits.get(capability, reason)}"
        for flag, capability, what, reason in _NEEDS
        if asked[flag] and capability not in brain_cls.capabilities
    ]


def _load_builtins() -> None:
    # Imported lazily so that importing the package does not import every backend.
    from app.brains.acp.agents import (  # noqa: F401
        claude_acp,
        codex,
        copilot,
        grok,
        opencode,
        pi,
        qwen,
    )
    from app.brains.catalog import catalog_brains
    from app.brains.claude import brain  # noqa: F401

    for brain_cls in catalog_brains():
        register(brain_cls)
