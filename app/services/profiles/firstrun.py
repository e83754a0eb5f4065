"""First run: the agent the wizard suggests, and the profile a new session starts with.

No profile is ever made without the user: the folder ``angelia serve`` was started in is
often Angelia's own checkout, not a project to hand to an agent, so with no profile the
wizard asks for one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Types only: ``angelia doctor`` uses this module and starts without the ORM.
    from app.db.models import ChatSession, Profile


def preferred_profile(profiles: Sequence[Profile], recent: Sequence[ChatSession]) -> str | None:
    """The id of the profile a new session starts with: that of the most recently active
    session, else the most recently created one (None with no profiles).

    The user's latest choice, not the oldest profile: the first one may be a folder made
    on a first run that they have moved on from."""
    known = {p.id for p in profiles}
    for chat in recent:
        if chat.profile_id in known:
            return chat.profile_id
    newest = max(profiles, key=lambda p: p.created_at, default=None)
    return newest.id if newest else None


def suggested_folder(cwd: Path) -> str:
    """The wizard's first project folder: where ``angelia serve`` was started, unless that
    is Angelia's own checkout (the quick start runs from there), which is left for the
    user to choose rather than offered to an agent."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file() and cwd.resolve().is_relative_to(checkout):
        return ""
    return str(cwd)


def split_backends(
    described: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(found, missing) of ``BackendDetector.describe_all()``, Claude Code first.

    The generic ACP backend has no executable of its own, so it is in neither: it is for
    the full profile form, not for a first run."""
    found = [b for b in described if b["found"] and b["executable"]]
    missing = [b for b in described if not b["found"] and b["executable"]]
    found.sort(key=_wizard_order)
    missing.sort(key=_wizard_order)
    return found, missing


def suggested_backend(found: Sequence[str]) -> str:
    """The backend a newcomer starts with, from the names found (in the wizard's order).

    Claude Code when it is found or nothing is (so the page can say how to install it),
    else the first one."""
    return "claude" if "claude" in found or not found else found[0]


def _wizard_order(backend: dict[str, Any]) -> tuple[bool, str]:
    return backend["name"] != "claude", str(backend["label"]).casefold()
