"""A session whose worktree is gone: discarded, or merged and cleaned up.

Such a session is read-only. Its agent never starts again (it would have nowhere to work
but the user's own checkout), so nothing is sent, forked or continued from it, and its
@-mentions list nothing. What it changed is recorded as its worktree goes (the branch goes
with the folder), so its Changes tab still shows its own work, never the checkout
(``app.services.review.session_changes.recorded_changes`` reads it back).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy.engine import Engine

from app.db.models import ChatSession, utcnow
from app.errors import ConflictError
from app.services.git import changes as git_changes
from app.services.git.repo import GitError
from app.services.sessions.workspace import git_place
from app.services.store import store
from app.services.store.eventlog import EventLog

__all__ = [
    "CLOSED_KIND",
    "Closed",
    "SessionClosed",
    "closed_of",
    "kept_changes",
    "mark_closed",
    "refuse_if_closed",
]

How = Literal["discarded", "cleaned_up"]
# The event that keeps the changes a session's worktree held as it went (not shown in
# the transcript; the Changes tab reads it).
CLOSED_KIND = "worktree_closed"
# Diffs kept at most, all files together; the file list is always kept whole.
DIFF_BUDGET = 512_000


class SessionClosed(ConflictError):
    """The session's worktree is gone: it is read-only (409, with what happened)."""


@dataclass(frozen=True)
class Closed:
    how: str  # "discarded", "cleaned_up", or "removed" (recorded before the app said how)
    at: datetime | None
    branch: str
    base: str

    @property
    def summary(self) -> str:
        """What happened and when, as the banner says it."""
        when = f" on {_when(self.at)}" if self.at else ""
        if self.how == "cleaned_up":
            return (
                f"This session's branch {self.branch} was merged into {self.base} and its "
                f"worktree cleaned up{when}."
            )
        if self.how == "discarded":
            return f"This session's worktree (branch {self.branch}) was discarded{when}."
        return f"This session's worktree (branch {self.branch}) was removed{when}."

    def refusal(self, doing: str) -> str:
        return (
            f"{self.summary} The session is read-only, so {doing} is not possible: its agent "
            "would have nowhere to work but your own checkout. Start a new session to go on."
        )


def closed_of(chat: ChatSession) -> Closed | None:
    """How the session's worktree went; None while it has one, or never had one."""
    if chat.worktree_path or not chat.worktree_branch:
        return None
    at = chat.worktree_closed_at
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # SQLite gives stored times back without a zone
    return Closed(
        chat.worktree_closed or "removed", at, chat.worktree_branch, chat.worktree_base or ""
    )


def refuse_if_closed(chat: ChatSession, doing: str) -> None:
    """Raises SessionClosed (409) when the session's worktree is gone."""
    closed = closed_of(chat)
    if closed is not None:
        raise SessionClosed(closed.refusal(doing))


def mark_closed(
    engine: Engine, events: EventLog, session_id: str, how: How, kept: dict[str, Any]
) -> None:
    """The session records that its worktree went, how and when, with the changes
    ``kept_changes`` read before it went (its transcript stays)."""
    events.append(session_id, CLOSED_KIND, {"how": how, **kept})
    store.update_session(
        engine, session_id, worktree_path=None, worktree_closed=how, worktree_closed_at=utcnow()
    )


def kept_changes(engine: Engine, chat: ChatSession) -> dict[str, Any]:
    """What the session's worktree holds, to keep as it goes (blocking: git): every file
    between the commit it left its base at and the worktree now, as the Changes tab's git
    view reads them. Diffs beyond ``DIFF_BUDGET`` in all are cut (their files stay listed);
    a worktree git cannot read leaves a note instead of a list."""
    if not (chat.worktree_path and chat.worktree_base_commit):
        return {"files": []}
    try:
        # Through the git dir recorded for the worktree, checked first: never a .git the
        # agent re-pointed.
        place = git_place(chat, store.session_profile(engine, chat))
        if place is None:
            return {"files": [], "note": "Its changes could not be read as it went."}
        top = place.work_tree
        found = git_changes.diff(place, chat.worktree_base_commit, max_total_bytes=DIFF_BUDGET)
    except GitError as exc:
        return {"files": [], "note": f"Its changes could not be read as it went: {exc.message}"}
    files = [{**asdict(f), "changed_outside": False, "steps": 0} for f in found]
    return {
        "branch": chat.worktree_branch,
        "base": chat.worktree_base_commit,
        "root": str(top),
        "files": files,
    }


def _when(at: datetime) -> str:
    return f"{at.day} {at.strftime('%b %Y')} at {at.strftime('%H:%M')} UTC"
