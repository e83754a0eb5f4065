"""A running CLI whose profile changed since it started.

A CLI takes its profile at start: the deny and allow lists on its command line or in
its config, the MCP servers, the environment, the command itself. Edited while a
session's CLI runs, the profile would reach that CLI only at its next start — a deny
rule added for safety would not hold until then (Codex in full access, Claude Code in
bypass mode run tools unasked). So before each message the session manager compares
what the running CLI started with against the profile now; a backend that takes a
conversation up again by id is restarted with the new settings first, and one that
cannot says so in the transcript instead of losing the conversation.
"""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine

from app.brains import get_brain_class
from app.brains.base import Capability
from app.db.models import Profile
from app.services.store import store
from app.services.store.eventlog import EventLog

__all__ = ["catch_up", "profile_print"]

# Everything of a profile that goes into a CLI's start (see brain_start.brain_config).
STARTED_WITH = (
    "cwd",
    "model",
    "reasoning_effort",
    "allowed_tools",
    "disallowed_tools",
    "mcp_servers",
    "command",
    "env",
)


def profile_print(profile: Profile) -> str:
    """What of ``profile`` a CLI takes at start, as one comparable string."""
    fields = profile.model_dump(include=set(STARTED_WITH))
    return json.dumps(fields, sort_keys=True, default=str)


def catch_up(
    engine: Engine, events: EventLog, session_id: str, started_with: str
) -> tuple[str, bool]:
    """(the profile's print now, whether the session's CLI should restart to take it).

    A change is noted in the transcript once: that the CLI restarts, or why it cannot."""
    chat = store.get_session(engine, session_id)
    profile = store.session_profile(engine, chat)
    now = profile_print(profile)
    if now == started_with:
        return now, False
    brain = get_brain_class(profile.backend)
    if Capability.RESUME not in brain.capabilities or not chat.backend_session_id:
        text = (
            f"The profile changed after {brain.label} started. It cannot take this "
            "conversation up again, so it goes on with the settings it started with; a "
            "new session uses the new ones."
        )
        events.append(session_id, "note", {"text": text, "note": "profile_kept"})
        return now, False
    text = (
        f"The profile changed after {brain.label} started: it restarts with the new "
        "settings before this message, and the conversation goes on."
    )
    events.append(session_id, "note", {"text": text, "note": "profile_changed"})
    return now, True
