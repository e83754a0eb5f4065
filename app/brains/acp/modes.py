"""Permission modes of an ACP agent: which agent mode stands for each of the app's modes.

The catalog maps the app's mode names to the agent's mode ids. A mode the agent lacks
may still be kept by the app itself, by answering every question the agent asks in its
asking mode (rules, then ``bypassPermissions`` allows all), so such an agent is put in
that mode rather than left in one that runs everything unasked.

Plain data and functions, no SDK: the brain's module loads this at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.errors import ValidationFailed

__all__ = ["APP_KEPT_MODES", "ASKING_MODE", "agent_mode", "kept_by_app", "require_mode"]

# The modes the app can keep for any agent that asks before acting, by answering itself.
APP_KEPT_MODES = ("default", "bypassPermissions", "dontAsk")
# The agent mode id that asks before acting, for a mode the app keeps itself.
ASKING_MODE = "default"


def kept_by_app(mode: str, mode_map: Mapping[str, str], modes: Sequence[str]) -> bool:
    """``mode`` is one the agent lacks and the app keeps by answering in its asking mode."""
    native = mode_map.get(mode, mode) in modes
    return mode in APP_KEPT_MODES and not native and ASKING_MODE in modes


def require_mode(label: str, mode: str, wanted: str, modes: Sequence[str]) -> None:
    """Refuse the app's ``mode`` unless ``wanted`` is one of ``modes``.

    Raises:
        ValidationFailed: It is not; the message lists the modes there are.
    """
    if wanted not in modes:
        have = ", ".join(modes) if modes else "none"
        raise ValidationFailed("mode", f"{label} has no {mode!r} mode; its modes: {have}")


def agent_mode(label: str, mode: str, mode_map: Mapping[str, str], modes: Sequence[str]) -> str:
    """The agent's mode id for the app's ``mode``: the catalog's, or the asking mode when
    the app keeps ``mode`` itself.

    Raises:
        ValidationFailed: The agent has no such mode; the message lists the ones it has.
    """
    target = ASKING_MODE if kept_by_app(mode, mode_map, modes) else mode_map.get(mode, mode)
    require_mode(label, mode, target, modes)
    return target
