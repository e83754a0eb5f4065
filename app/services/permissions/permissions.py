"""Permission requests: stored server state, answered exactly once, every answer recorded.

A brain only translates its wire format into ``PermissionAsked`` and a
``PermissionAnswer`` back; everything else (ids, storage, the exactly-once rule, the
events the pages render) lives here, so every backend gets the same behaviour.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.brains.base import PermissionAnswer
from app.brains.events import PermissionAsked, PermissionChoice
from app.db.models import ChatSession, PermissionRequest, utcnow
from app.errors import ConflictError, NotFoundError
from app.services.permissions.preview import build_preview
from app.services.permissions.prompts import answered_input
from app.services.permissions.rules import suggest_rule
from app.services.store.eventlog import EventLog

Deliver = Callable[[str, str, PermissionAnswer], Awaitable[None]]

DECISION_LABELS: dict[str, str] = {
    "allow_once": "allowed once",
    "allow_always": "allowed always",
    "deny": "denied",
    "deny_stop": "denied and stopped",
    "cancelled": "cancelled",
    "expired": "expired",
}


def permission_to_dict(row: PermissionRequest) -> dict[str, Any]:
    return {
        "id": row.id,
        "session_id": row.session_id,
        "tool": row.tool,
        "input": row.input,
        "options": row.options,
        "title": row.title,
        "reason": row.reason,
        "tool_call_id": row.tool_call_id,
        "kind": row.kind,
        "answers": row.answers,
        "rule": row.rule,
        "waited_ms": (
            int((row.decided_at - row.created_at).total_seconds() * 1000)
            if row.decided_at
            else None
        ),
        "status": row.status,
        "decision": row.decision,
        "source": row.source,
        "message": row.message,
        "created_at": row.created_at,
        "decided_at": row.decided_at,
    }


def outside_folders(path: str, folders: Collection[str]) -> bool:
    """Whether ``path`` (relative: to the first folder) lies outside every one of ``folders``.

    Claude Code sends the path a tool touches as ``blocked_path`` for other reasons too
    (a file to create in the project, say), so it is "outside" only when this says so.
    Symbolic links count both ways: ``/tmp/x`` is inside a folder reached through one.
    """
    if not folders:
        return False
    base = next(iter(folders))
    target = os.path.join(base, os.path.expanduser(path))
    for resolve in (os.path.normpath, os.path.realpath):
        where = resolve(target)
        for folder in folders:
            root = resolve(folder)
            if where == root or where.startswith(root.rstrip(os.sep) + os.sep):
                return False
    return True


class PermissionService:
    def __init__(self, engine: Engine, events: EventLog, deliver: Deliver) -> None:
        self._engine = engine
        self._events = events
        self._deliver = deliver

    def ask(self, session_id: str, asked: PermissionAsked, cwd: str = "") -> PermissionRequest:
        """Store a new pending request and its ``permission_request`` event.

        The session's only folder is ``cwd`` (the app gives the CLI no others): the card
        calls a ``blocked_path`` outside it so, and shows any other one plainly.
        """
        options = [asdict(o) for o in asked.options]
        row = PermissionRequest(
            session_id=session_id,
            backend_request_id=asked.request_id,
            tool=asked.tool,
            input=asked.input,
            options=options,
            title=asked.title,
            reason=asked.reason,
            tool_call_id=asked.tool_call_id,
            kind=asked.prompt_kind,
        )
        with Session(self._engine) as db:
            db.add(row)
            db.commit()
            db.refresh(row)
        self._events.append(
            session_id,
            "permission_request",
            {
                "permission_id": row.id,
                "tool": asked.tool,
                "input": asked.input,
                "options": options,
                "title": asked.title,
                "reason": asked.reason,
                "blocked_path": asked.blocked_path,
                "blocked_outside": bool(asked.blocked_path)
                and outside_folders(asked.blocked_path, [cwd] if cwd else []),
                "tool_call_id": asked.tool_call_id,
                "prompt": asked.prompt_kind,
                "parent_tool_call_id": asked.parent_tool_call_id,
                "preview": build_preview(asked.tool, asked.input, cwd),
                "always_rule": (
                    suggest_rule(asked.tool, asked.input, cwd)
                    if asked.prompt_kind == "tool"
                    else ""
                ),
                "status": "pending",
            },
        )
        return row

    def get(self, permission_id: str) -> PermissionRequest:
        with Session(self._engine) as db:
            row = db.get(PermissionRequest, permission_id)
            if row is None:
                raise NotFoundError(f"Permission request {permission_id} not found")
            return row

    def find(
        self,
        *,
        status: str | None = None,
        session_id: str | None = None,
        profile_id: str | None = None,
        tool: str | None = None,
        decision: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 500,
    ) -> list[PermissionRequest]:
        """Requests, newest first, filtered for the audit log."""
        with Session(self._engine) as db:
            stmt = select(PermissionRequest)
            if profile_id:
                stmt = stmt.join(
                    ChatSession, col(ChatSession.id) == col(PermissionRequest.session_id)
                ).where(col(ChatSession.profile_id) == profile_id)
            filters = {
                "status": status,
                "session_id": session_id,
                "tool": tool,
                "decision": decision,
                "source": source,
            }
            for name, value in filters.items():
                if value:
                    stmt = stmt.where(col(getattr(PermissionRequest, name)) == value)
            if since is not None:
                stmt = stmt.where(col(PermissionRequest.created_at) >= since)
            if until is not None:
                stmt = stmt.where(col(PermissionRequest.created_at) <= until)
            stmt = stmt.order_by(col(PermissionRequest.created_at).desc()).limit(limit)
            return list(db.exec(stmt))

    def pending_count(self, session_id: str | None = None) -> int:
        return len(self.find(status="pending", session_id=session_id))

    def pending_by_session(self, session_ids: Collection[str]) -> dict[str, int]:
        """Pending requests per session, for a whole page of sessions in one query."""
        if not session_ids:
            return {}
        stmt = (
            select(col(PermissionRequest.session_id), func.count())
            .where(
                col(PermissionRequest.status) == "pending",
                col(PermissionRequest.session_id).in_(sorted(set(session_ids))),
            )
            .group_by(col(PermissionRequest.session_id))
        )
        with Session(self._engine) as db:
            return {sid: int(n) for sid, n in db.exec(stmt)}

    def _claim(
        self,
        permission_id: str,
        status: str,
        decision: str,
        source: str,
        message: str | None,
        rule: str | None = None,
        answers: dict[str, str] | None = None,
    ) -> PermissionRequest | None:
        """Atomically move a pending request to ``status``; None if it was not pending."""
        with Session(self._engine) as db:
            result = db.exec(
                update(PermissionRequest)
                .where(
                    col(PermissionRequest.id) == permission_id,
                    col(PermissionRequest.status) == "pending",
                )
                .values(
                    status=status,
                    decision=decision,
                    source=source,
                    message=message,
                    rule=rule,
                    answers=answers,
                    decided_at=utcnow(),
                )
            )
            db.commit()
            if result.rowcount != 1:
                return None
            return db.get(PermissionRequest, permission_id)

    async def decide(
        self,
        permission_id: str,
        choice: PermissionChoice,
        *,
        message: str | None = None,
        source: str = "user",
        rule: str | None = None,
        answers: dict[str, str] | None = None,
        mode: str = "",
    ) -> PermissionRequest:
        """Answer a pending request once; a second answer raises ``ConflictError``.

        ``answers`` (a question's, already checked) go back to the agent with the allow;
        ``mode`` (a plan approval's next permission mode) goes with the allow.
        """
        current = self.get(permission_id)
        row = self._claim(permission_id, "decided", choice, source, message, rule, answers)
        if row is None:
            current = self.get(permission_id)
            won = DECISION_LABELS.get(current.decision or "", current.status)
            raise ConflictError(
                f"This request was already answered: {won} by {current.source or 'someone'}."
            )
        self._record(row, mode)
        allowed = choice in ("allow_once", "allow_always")
        # Otherwise the brain echoes the input the backend sent, unchanged.
        updated = answered_input(current.input, answers) if allowed and answers else None
        answer = PermissionAnswer(
            choice=choice, message=message or "", updated_input=updated, mode=mode
        )
        await self._deliver(row.session_id, row.backend_request_id, answer)
        return row

    def close_pending(
        self, session_id: str, *, status: str, source: str, message: str, backend_id: str = ""
    ) -> list[PermissionRequest]:
        """Mark pending requests of a session cancelled/expired (no answer is delivered)."""
        closed: list[PermissionRequest] = []
        for row in self.find(status="pending", session_id=session_id):
            if backend_id and row.backend_request_id != backend_id:
                continue
            claimed = self._claim(row.id, status, status, source, message)
            if claimed is not None:
                self._record(claimed)
                closed.append(claimed)
        return closed

    def _record(self, row: PermissionRequest, mode: str = "") -> None:
        payload: dict[str, Any] = {
            "permission_id": row.id,
            "tool": row.tool,
            # "kind" is the event's own kind in the stored shape.
            "prompt": row.kind,
            "decision": row.decision,
            "source": row.source,
            "message": row.message or "",
            "rule": row.rule or "",
        }
        if row.answers:
            payload["answers"] = row.answers
        if mode:
            payload["mode"] = mode
        self._events.append(row.session_id, "permission_decision", payload)
