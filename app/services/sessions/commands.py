"""The slash commands a session's backend offers, read from its stored events.

Claude Code names its commands in ``session_info`` (``slash_commands``) on every start
and describes them once, in a ``commands`` event; ACP agents send the whole described
list (``commands``) each time it changes. Items are ``{"name", "description"}`` dicts
or, in events stored before descriptions were kept, bare names. This is the one reader
of those payloads: the page, its composer and Compact all ask here.
"""

from __future__ import annotations

from app.services.store.eventlog import EventDict, EventLog

__all__ = ["command_entries", "command_names", "newest", "offered_commands"]

# Longer is not a command name but noise in an agent's list.
MAX_NAME = 100


def command_entries(value: object) -> dict[str, str]:
    """Slash command name -> description ("" when unknown), without the leading "/",
    deduplicated, in the given order."""
    if not isinstance(value, list | tuple):
        return {}
    entries: dict[str, str] = {}
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str):
            name = name.strip().lstrip("/")
            if name and name not in entries and len(name) <= MAX_NAME:
                text = item.get("description") if isinstance(item, dict) else ""
                entries[name] = text if isinstance(text, str) else ""
    return entries


def command_names(value: object) -> list[str]:
    """The names of ``command_entries``."""
    return list(command_entries(value))


def offered_commands(events: EventLog, session_id: str) -> dict[str, str] | None:
    """Name -> description of the commands the backend listed last, or None while it has
    listed none. Claude Code's newer bare list keeps the descriptions it gave earlier."""
    info = newest(events, session_id, "session_info")
    listed = newest(events, session_id, "commands")
    if info is None and listed is None:
        return None
    described = command_entries(listed.get("commands")) if listed is not None else {}
    if listed is not None and (info is None or listed["seq"] > info["seq"]):
        return described
    names = command_names((info or {}).get("slash_commands"))
    return {name: described.get(name, "") for name in names}


def newest(events: EventLog, session_id: str, kind: str) -> EventDict | None:
    """The session's newest stored event of ``kind`` (with its ``seq``), if any."""
    found = events.list(session_id, kind=kind, newest=True, limit=1)
    return found[0] if found else None
