"""What the user changes in a running conversation: decisions, mode, model.

Each change is checked, applied to the backend if one runs (or kept for when it
starts) and recorded as an event, so the transcript shows it live and after a reload.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from app.brains import get_brain_class
from app.brains.base import Brain
from app.brains.events import PermissionChoice
from app.errors import AppError, ConflictError, ValidationFailed
from app.services.permissions.approvals import Approvals
from app.services.permissions.permissions import PermissionService, permission_to_dict
from app.services.permissions.prompts import check_decision
from app.services.sessions.model_choice import check_model_offered, session_models
from app.services.store import store
from app.services.store.eventlog import EventLog

log = logging.getLogger(__name__)


class SessionControls:
    def __init__(
        self,
        engine: Engine,
        events: EventLog,
        approvals: Approvals,
        brain_of: Callable[[str], Brain | None],
        brain_for: Callable[[str], Awaitable[Brain]],
        busy: Callable[[str], bool],
    ) -> None:
        self._engine = engine
        self.events = events
        self.approvals = approvals
        self.permissions: PermissionService = approvals.permissions
        self._brain_of = brain_of
        self._brain_for = brain_for
        self._busy = busy

    async def decide(
        self,
        permission_id: str,
        choice: PermissionChoice,
        message: str | None = None,
        *,
        answers: dict[str, Any] | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """The user's answer; a question takes ``answers``, a plan approval a ``mode``."""
        current = self.permissions.get(permission_id)
        chat = store.get_session(self._engine, current.session_id)
        profile = store.session_profile(self._engine, chat)
        checked = check_decision(current.kind, current.input, choice, answers, mode)
        previous = chat.permission_mode
        if checked.mode:
            # The approval itself moves the backend to the chosen mode; stored first so
            # its echo of the change is recognised as this switch, not a second one.
            store.update_session(self._engine, chat.id, permission_mode=checked.mode)
        try:
            row = await self.approvals.decide_user(
                permission_id, choice, message, profile, answers=checked.answers, mode=checked.mode
            )
        except AppError:
            if checked.mode:
                store.update_session(self._engine, chat.id, permission_mode=previous)
            raise
        if checked.mode:
            self.events.append(chat.id, "mode_changed", {"mode": checked.mode, "source": "plan"})
        return permission_to_dict(row)

    async def set_mode(
        self, session_id: str, mode: str, *, confirm: bool = False, source: str = "user"
    ) -> None:
        """Switch the permission mode; bypassPermissions needs an explicit confirmation."""
        store.get_session(self._engine, session_id)
        if mode == "bypassPermissions" and not confirm:
            raise ValidationFailed(
                "confirm",
                "bypassPermissions runs every tool without asking; confirm to switch to it",
            )
        chat = store.get_session(self._engine, session_id)
        cls = get_brain_class(store.get_profile(self._engine, chat.profile_id).backend)
        if mode not in cls.permission_modes:
            raise ValidationFailed(
                "mode",
                f"{cls.label} has no {mode!r} mode; its modes: {', '.join(cls.permission_modes)}",
            )
        brain = self._brain_of(session_id)
        previous = chat.permission_mode
        # Recorded before the backend is told, so its own echo of the change (which may
        # arrive before the control reply) is recognised as the same switch.
        store.update_session(self._engine, session_id, permission_mode=mode)
        if brain is not None:
            try:
                await brain.set_permission_mode(mode)
            except (NotImplementedError, AppError) as exc:
                store.update_session(self._engine, session_id, permission_mode=previous)
                raise ValidationFailed("mode", str(exc)) from exc
        self.events.append(session_id, "mode_changed", {"mode": mode, "source": source})

    async def set_model(self, session_id: str, model: str) -> None:
        """Use ``model`` from the next request on; kept on the session for later resumes.

        A live backend switches at once; otherwise the model is passed when it starts.
        Raises ``ConflictError`` (409) when the backend cannot switch mid-session.
        """
        chat = store.get_session(self._engine, session_id)
        brain = self._brain_of(session_id)
        if brain is not None:
            try:
                await brain.set_model(model)
            except NotImplementedError as exc:
                raise ConflictError(str(exc)) from exc
        else:
            check_model_offered(self._engine, self.events, chat, model)
        store.update_session(self._engine, session_id, model=model)
        self.events.append(session_id, "model_changed", {"model": model, "source": "user"})

    def models(self, session_id: str) -> dict[str, Any]:
        return session_models(self._engine, self.events, session_id)

    async def rewind(self, session_id: str, event_seq: int, *, dry_run: bool) -> dict[str, Any]:
        """Restore the files to their state before the message stored at ``event_seq``.

        ``dry_run`` only says which files would change. Raises ``ValidationFailed`` if
        that event is not a message the user sent, ``ConflictError`` (409) if the
        backend cannot rewind, a turn is running, or it has no checkpoint there.
        """
        store.get_session(self._engine, session_id)
        found = self.events.list(session_id, after=event_seq - 1, limit=1)
        if not found or found[0]["seq"] != event_seq or found[0]["kind"] != "user_message":
            raise ValidationFailed("event_seq", f"event {event_seq} is not a message you sent")
        message_id = str(found[0].get("message_id") or "")
        if not message_id:
            raise ConflictError(
                "That message was sent before file checkpoints were kept; it cannot be rewound to."
            )
        if self._busy(session_id):
            raise ConflictError(
                "The agent is working (or waits for an approval); stop the turn or "
                "wait for it to end, then rewind."
            )
        brain = await self._brain_for(session_id)
        try:
            # The real rewind does not say what it changed; the preview does.
            preview = await brain.rewind_files(message_id, dry_run=True)
            if not dry_run:
                await brain.rewind_files(message_id)
        except NotImplementedError as exc:
            raise ConflictError(str(exc)) from exc
        # The CLI's preview can miss files (seen after an earlier rewind), so the files
        # its edit tools changed since the message, as stored, are listed too.
        files = sorted({*preview.files, *self._edited_since(session_id, event_seq)})
        out: dict[str, Any] = {
            "event_seq": event_seq,
            "files": files,
            "insertions": preview.insertions,
            "deletions": preview.deletions,
        }
        if not dry_run:
            self.events.append(session_id, "rewind", out)
        return {**out, "dry_run": dry_run}

    def _edited_since(self, session_id: str, event_seq: int) -> set[str]:
        """Absolute paths that edit tools changed (successfully) after ``event_seq``."""
        cwd = Path(
            store.session_profile(self._engine, store.get_session(self._engine, session_id)).cwd
        )
        calls: dict[str, tuple[int, str]] = {}
        done: set[str] = set()
        for e in self.events.list(session_id, after=event_seq):
            if e["kind"] == "tool_call" and e.get("tool_kind") == "edit":
                path = (e.get("input") or {}).get("file_path")
                if isinstance(path, str) and path:
                    calls[str(e.get("tool_call_id"))] = (e["seq"], str(cwd / path))
            elif e["kind"] == "tool_result" and not e.get("is_error"):
                done.add(str(e.get("tool_call_id")))
            elif e["kind"] == "rewind":
                # Edits made after the message that rewind went back to are undone.
                target = int(e.get("event_seq") or 0)
                calls = {k: v for k, v in calls.items() if v[0] < target}
        return {path for call, (_seq, path) in calls.items() if call in done}
