"""Starting a chat session's backend: which brain, configured how, and where.

The brain class comes from the profile's backend; the configuration from the profile with
the session's own choices (model, permission mode) on top. A session with no backend id
yet but a parent starts as a fork of the parent's backend session.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.brains import get_brain_class
from app.brains.base import Brain, BrainConfig
from app.db.models import ChatSession, Profile
from app.errors import BrainStartError
from app.services.sessions.closed import refuse_if_closed

__all__ = ["LiveBrain", "backend_state_dir", "brain_config", "start_brain"]


@dataclass
class LiveBrain:
    """A running brain and what the session manager keeps beside it."""

    brain: Brain
    pump: asyncio.Task[None] | None = None
    last_activity: float = field(default_factory=time.monotonic)
    turn_active: bool = False
    last_total_cost: float | None = None
    stopping: bool = False
    # Set as the stopping server marks the turn interrupted: whatever the backend says
    # after that is not stored, so that notice stays the session's last word.
    interrupted: bool = False
    # The model the backend last said it runs, stored with each turn for the usage page.
    model: str = ""
    # What of its profile the CLI started with (profile_sync), and whether it is being
    # stopped to start again with a changed one (its waiting messages stay then).
    profile_print: str = ""
    restarting: bool = False


def backend_state_dir(state_root: Path, backend: str, session_id: str) -> Path:
    """Where a ``keeps_state`` backend keeps one session's state (e.g. its CODEX_HOME)."""
    return state_root / backend / session_id


def brain_config(
    chat: ChatSession, profile: Profile, state_root: Path | None = None
) -> BrainConfig:
    """The brain's configuration; ``state_root`` (the app's data folder) holds a folder
    per session for backends that keep their state there (``Brain.keeps_state``)."""
    forking = chat.backend_session_id is None and chat.forked_from is not None
    state_dir = None
    if state_root is not None and get_brain_class(profile.backend).keeps_state:
        state_dir = str(backend_state_dir(state_root, profile.backend, chat.id))
    return BrainConfig(
        session_id=chat.id,
        cwd=profile.cwd,
        backend_session_id=chat.forked_from if forking else chat.backend_session_id,
        fork=forking,
        model=chat.model or profile.model,
        permission_mode=chat.permission_mode or profile.permission_mode,
        reasoning_effort=profile.reasoning_effort,
        allowed_tools=tuple(profile.allowed_tools),
        disallowed_tools=tuple(profile.disallowed_tools),
        mcp_servers=dict(profile.mcp_servers),
        command=tuple(profile.command or ()),
        env=dict(profile.env),
        state_dir=state_dir,
    )


async def start_brain(chat: ChatSession, profile: Profile, state_root: Path | None = None) -> Brain:
    """A started brain for the session (``state_root``: see ``brain_config``).

    Raises:
        AppError: the folder is gone, the backend is unknown, or its CLI failed to start.
    """
    # Never fall back to the profile's folder: that is the user's own checkout (409).
    refuse_if_closed(chat, "starting its agent")
    if not Path(profile.cwd).is_dir():
        raise BrainStartError(
            f"The folder {profile.cwd} no longer exists, so the agent cannot "
            "start there. Restore the folder, or start a new session from this one."
        )
    brain = get_brain_class(profile.backend)(brain_config(chat, profile, state_root))
    await brain.start()
    return brain
