"""The session manager: at most one live brain per chat session.

It starts a brain on the first message (class chosen by ``profile.backend``), pumps the
brain's typed events into the event log, stops brains that sat idle too long (they come
back with resume on the next message), and stops every brain at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.engine import Engine

from app.brains.base import Brain, ImageData, PermissionAnswer
from app.brains.events import (
    BackendSession,
    BrainError,
    BrainEvent,
    BrainExited,
    ModeChanged,
    ModelsOffered,
    PermissionAsked,
    PermissionCancelled,
    SessionInfo,
    TitleChanged,
    TurnEnded,
)
from app.db.models import ChatSession, Profile
from app.errors import AppError, ValidationFailed
from app.errors import BrainError as BrainFailure
from app.services.git import folder_snapshot
from app.services.permissions.approvals import Approvals
from app.services.permissions.permissions import PermissionService
from app.services.sessions import folder_files
from app.services.sessions.brain_start import LiveBrain, backend_state_dir, start_brain
from app.services.sessions.capacity import AgentCap, Hold
from app.services.sessions.closed import refuse_if_closed
from app.services.sessions.controls import SessionControls
from app.services.sessions.images import ImageStore
from app.services.sessions.outbox import Message, Outbox
from app.services.sessions.profile_sync import catch_up, profile_print
from app.services.sessions.recovery import halt, kill_group, mark_stopped, recover
from app.services.sessions.steer import Steering
from app.services.sessions.turns import coalesce_deltas, session_totals, turn_share
from app.services.sessions.workspace import git_place
from app.services.store import store
from app.services.store.eventlog import EventLog
from app.settings import Settings

log = logging.getLogger(__name__)

# How many of a session's events may wait for the writer before its reader waits too: a
# few of the writer's batches, so a flood keeps the disk busy while another session's
# next event waits behind a few milliseconds of it, not behind all of it.
WRITER_LAG = 500


class SessionManager:
    def __init__(self, engine: Engine, events: EventLog, settings: Settings) -> None:
        self._engine = engine
        self.events = events
        self.settings = settings
        self.permissions = PermissionService(engine, events, self._deliver)
        self.approvals = Approvals(engine, self.permissions)
        self.controls = SessionControls(
            engine, events, self.approvals, self._brain_of, self.brain_for, self.busy
        )
        self._live: dict[str, LiveBrain] = {}
        self.agents = AgentCap(settings.max_agents, lambda: len(self._live))
        self.outbox = Outbox(events)
        self.steering = Steering(engine, events, self.permissions, self._live.get)
        self.images = ImageStore(settings.data_dir / "images")
        self._start_locks: dict[str, asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # -- lifecycle ---------------------------------------------------------------
    def recover(self) -> None:
        """After a crash or kill of the app: reap orphans, expire prompts, mark sessions."""
        recover(self._engine, self.events, self.permissions, self.settings.data_dir)

    def start_background(self) -> None:
        self._reaper = asyncio.create_task(self._reap_idle_loop())

    async def shutdown(self, grace: float | None = None) -> None:
        """Stop every brain and expire every waiting prompt, for a stopping server.

        A backend in a turn has its process group ended first (``halt``), within
        ``grace``; then each backend's close has ``grace`` per step (stdin EOF, then
        SIGTERM to its group), in parallel. Messages queued behind a prompt are dropped.
        """
        self.approvals.close()
        folder_files.FOLDER_FILES.stop_all()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        ends = []
        for sid, live in list(self._live.items()):
            live.stopping = True
            self._drop_queue(sid)
            busy = self.busy(sid)
            live.interrupted = mark_stopped(self._engine, self.events, self.permissions, sid, busy)
            ends.append(self._end(sid, live, grace, busy))
        await asyncio.gather(*ends, return_exceptions=True)

    async def _end(self, sid: str, live: LiveBrain, grace: float | None, busy: bool) -> None:
        if busy:
            await halt(live, self.settings.close_timeout_s if grace is None else grace)
        if self._live.get(sid) is live:
            await self.stop_brain(sid, grace)
        else:  # exited: only its pipes and reader are left to close
            await live.brain.stop(grace)

    def kill_backends_now(self) -> None:
        """SIGKILL every backend's process group at once (a forced exit: no waiting)."""
        for live in self._live.values():
            if live.brain.pid is not None:
                kill_group(live.brain.pid)

    def process_groups(self) -> set[int]:
        """The process groups of the running backends (each leads its own)."""
        return {live.brain.pid for live in self._live.values() if live.brain.pid is not None}

    def is_live(self, session_id: str) -> bool:
        return session_id in self._live

    def _brain_of(self, session_id: str) -> Brain | None:
        live = self._live.get(session_id)
        return live.brain if live is not None else None

    # -- operations --------------------------------------------------------------
    async def send_message(
        self,
        session_id: str,
        text: str,
        images: Sequence[ImageData] = (),
        *,
        scheduled: bool = False,
        held: Hold | None = None,
    ) -> bool:
        """Send a message; returns True if it waits (editable) until the agent is free.

        Images need a backend that takes them (an ACP agent says so when it starts);
        otherwise ``ValidationFailed`` and nothing is stored or sent. ``scheduled`` marks
        a message the app sends for the user at the time they set. A backend that must
        start takes a place under the cap on running agents (from ``held`` if given);
        without one, ``AgentCapReached`` and nothing is stored or sent.
        """
        chat = store.get_session(self._engine, session_id)
        # Before anything is stored: a session whose worktree is gone is read-only.
        refuse_if_closed(chat, "sending a message")
        if session_id not in self._live and held is None:
            self.agents.check()
        if images:
            brain = (await self._ensure_brain(session_id, held)).brain
            if not brain.accepts_images():
                raise ValidationFailed(
                    "images", f"{brain.label} does not take images; send the text alone"
                )
        refs = tuple(self.images.save(session_id, i).ref(session_id) for i in images)
        message = Message(text, tuple(images), refs, scheduled=scheduled)
        if not chat.title:
            title = store.title_from_message(text or "Image")
            store.update_session(self._engine, session_id, title=title)
        live = self._live.get(session_id)
        if self.permissions.pending_count(session_id):
            # Sending now would end the turn that waits for the answer and lose the
            # prompt; the message waits until every pending request is answered.
            self.outbox.add(session_id, message, reason="approval")
            return True
        if live is not None and live.turn_active:
            # Held here rather than in the backend, so it can still be edited or dropped.
            self.outbox.add(session_id, message, reason="turn")
            return True
        self.events.append(session_id, "user_message", message.payload())
        await self._send_now(session_id, message, held)
        return False

    def edit_queued(self, session_id: str, seq: int, text: str) -> None:
        store.get_session(self._engine, session_id)
        self.outbox.edit(session_id, seq, text)

    def drop_queued(self, session_id: str, seq: int) -> None:
        store.get_session(self._engine, session_id)
        self.outbox.drop(session_id, seq)

    async def _send_queued(self, session_id: str) -> None:
        """Send the next waiting message once the agent is free (one per turn)."""
        live = self._live.get(session_id)
        if live is not None and live.turn_active or self.permissions.pending_count(session_id):
            return
        item = self.outbox.take(session_id)
        if item is None:
            return
        try:
            await self._send_now(session_id, item.message)
        except AppError:
            log.warning("queued message for %s could not be sent", session_id)

    async def _send_now(self, session_id: str, message: Message, held: Hold | None = None) -> None:
        live = self._live.get(session_id)
        if live is not None and not live.turn_active:
            await self._catch_up_with_profile(session_id, live)
        live = await self._ensure_brain(session_id, held)
        live.turn_active = True
        live.last_activity = time.monotonic()
        self._set_status(session_id, "working")
        await live.brain.send(message.text, images=message.images, message_id=message.message_id)

    async def brain_for(self, session_id: str) -> Brain:
        """The session's running backend, started (resumed) if it is not running."""
        return (await self._ensure_brain(session_id)).brain

    def busy(self, session_id: str) -> bool:
        """Whether a turn runs or an approval waits (the files may be changing)."""
        live = self._live.get(session_id)
        turn = live is not None and live.turn_active
        return turn or bool(self.permissions.pending_count(session_id))

    async def interrupt(self, session_id: str) -> None:
        store.get_session(self._engine, session_id)
        self._drop_queue(session_id)
        await self.approvals.cancel_pending(session_id, "The user stopped the turn.")
        live = self._live.get(session_id)
        if live is not None:
            await live.brain.interrupt()

    async def delete_session(self, session_id: str) -> None:
        chat = store.get_session(self._engine, session_id)
        await self.stop_brain(session_id)
        # Its last events must reach the disk before the rows they belong to are gone.
        await self.events.flush()
        store.delete_session(self._engine, session_id)
        self.images.delete_session(session_id)
        self.events.forget(session_id)
        # What the backend kept for this session (Codex's transcripts, the link to the user's login)
        # goes with it.
        shutil.rmtree(
            backend_state_dir(self.settings.data_dir, chat.backend, chat.id), ignore_errors=True
        )
        # And the private snapshot of its folder, when it is outside git.
        await asyncio.to_thread(folder_snapshot.remove, self.settings.data_dir, chat.id)

    async def stop_brain(self, session_id: str, grace: float | None = None) -> None:
        """Stop the session's backend; ``grace`` bounds each close step (``Brain.stop``)."""
        # A listing of its folder started for its "@" and wanted by nobody else ends.
        folder_files.FOLDER_FILES.release(session_id)
        live = self._live.get(session_id)
        if live is None:
            return
        live.stopping = True
        self._drop_queue(session_id)
        await self.approvals.cancel_pending(session_id, "The session was stopped.")
        await self._halt(live, grace)

    async def _halt(self, live: LiveBrain, grace: float | None = None) -> None:
        """Stop ``live``'s backend and wait (bounded) for its last events to be stored."""
        await live.brain.stop(grace)
        if live.pump is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(
                    asyncio.shield(live.pump), timeout=10 if grace is None else grace
                )

    async def _catch_up_with_profile(self, session_id: str, live: LiveBrain) -> None:
        """Restart a CLI whose profile changed since it started (profile_sync)."""
        now, restart = catch_up(self._engine, self.events, session_id, live.profile_print)
        live.profile_print = now
        if restart:
            live.stopping = live.restarting = True
            await self._halt(live)

    # -- internals ---------------------------------------------------------------
    async def _ensure_brain(self, session_id: str, held: Hold | None = None) -> LiveBrain:
        lock = self._start_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            live = self._live.get(session_id)
            if live is not None and live.brain.alive:
                return live
            chat = store.get_session(self._engine, session_id)
            # Never in the profile's folder for a session made in a worktree (409).
            refuse_if_closed(chat, "starting its agent")
            profile = store.session_profile(self._engine, chat)
            with self.agents.starting(held):
                return await self._start(session_id, chat, profile)

    async def _start(self, session_id: str, chat: ChatSession, profile: Profile) -> LiveBrain:
        """Start the session's backend and count it live (a place under the cap is held)."""
        try:
            brain = await start_brain(chat, profile, self.settings.data_dir)
        except AppError as exc:
            payload: dict[str, object] = {"message": exc.message, "detail": exc.detail}
            if chat.backend_session_id or chat.forked_from:
                # The backend could not pick the conversation up again; offer a
                # fresh session that links back to this one instead of a dead end.
                payload["resume_failed"] = True
                payload["continue_url"] = f"/sessions/{session_id}/continue"
            self.events.append(session_id, "error", payload)
            self._set_status(session_id, "failed")
            raise
        live = LiveBrain(brain=brain, profile_print=profile_print(profile))
        self._live[session_id] = live
        # Lists the folder for the composer's "@" unless it is kept already (in a thread).
        folder_files.warm(session_id, Path(profile.cwd), lambda: git_place(chat, profile))
        store.update_session(self._engine, session_id, backend_pid=brain.pid, status="live")
        live.pump = asyncio.create_task(self._pump(session_id, live))
        return live

    async def _pump(self, session_id: str, live: LiveBrain) -> None:
        try:
            async for batch in live.brain.event_batches():
                live.last_activity = time.monotonic()
                for event in coalesce_deltas(batch):
                    try:
                        self._handle(session_id, live, event)
                    except Exception:
                        log.exception("failed to handle %s for session %s", event.kind, session_id)
                # A backend writing flat out never makes its reader wait, so without this
                # one session's burst would hold off every request and every other stream,
                # and queue events faster than they are stored, ahead of everyone else's.
                await asyncio.sleep(0)
                await self.events.caught_up(session_id, WRITER_LAG)
        finally:
            if self._live.get(session_id) is live:
                del self._live[session_id]

    def _handle(self, session_id: str, live: LiveBrain, event: BrainEvent) -> None:
        if live.interrupted and not isinstance(event, BrainExited):
            # The stopping server has said the turn was interrupted: a reply stored now
            # would sit under that notice as if the turn had gone on.
            return
        if isinstance(event, SessionInfo | ModelsOffered):
            live.model = (event.model if isinstance(event, SessionInfo) else event.current) or (
                live.model
            )
        if isinstance(event, PermissionAsked):
            chat = store.get_session(self._engine, session_id)
            profile = store.session_profile(self._engine, chat)
            mode = chat.permission_mode or profile.permission_mode
            _row, automatic = self.approvals.on_asked(session_id, event, profile, mode)
            if not automatic:
                self._set_status(session_id, "waiting")
        elif isinstance(event, PermissionCancelled):
            self.permissions.close_pending(
                session_id,
                status="cancelled",
                source="cancel",
                message="The agent withdrew the request.",
                backend_id=event.request_id,
            )
        elif isinstance(event, TurnEnded):
            self._turn_ended(session_id, live, event)
        elif isinstance(event, BackendSession):
            store.update_session(
                self._engine, session_id, backend_session_id=event.backend_session_id
            )
            self.events.append(session_id, event.kind, event.payload())
        elif isinstance(event, BrainExited):
            self._exited(session_id, live, event)
        elif isinstance(event, ModeChanged):
            chat = store.get_session(self._engine, session_id)
            if chat.permission_mode != event.mode:
                store.update_session(self._engine, session_id, permission_mode=event.mode)
                self.events.append(
                    session_id, event.kind, {"mode": event.mode, "source": "backend"}
                )
        elif isinstance(event, TitleChanged):
            self.events.append(session_id, event.kind, event.payload())
            chat = store.get_session(self._engine, session_id)
            first = self.events.list(session_id, limit=1)
            auto = store.title_from_message(first[0].get("text", "")) if first else ""
            # The agent may name the conversation, but never over a title the user chose.
            if event.title and chat.title in ("", auto):
                store.update_session(self._engine, session_id, title=event.title[:300])
        elif isinstance(event, BrainError):
            payload = event.payload()
            payload.pop("fatal", None)
            self.events.append(session_id, event.kind, payload)
        else:
            self.events.append(session_id, event.kind, event.payload())

    def _turn_ended(self, session_id: str, live: LiveBrain, event: TurnEnded) -> None:
        chat = store.get_session(self._engine, session_id)
        turn_cost, live.last_total_cost = turn_share(
            event.cost_usd, live.last_total_cost, chat.cost_usd
        )
        payload = {**event.payload(), "cost_usd": turn_cost, "model": live.model}
        self.events.append(session_id, "turn_end", payload)
        live.turn_active = False
        store.update_session(self._engine, session_id, **session_totals(chat, event, turn_cost))
        # Claude Code ends its turn when a stopping server closes its stdin; the session
        # was interrupted all the same, and must say so.
        if not live.stopping:
            self._set_status(session_id, "live")
            if self.outbox.items(session_id):
                task = asyncio.create_task(self._send_queued(session_id))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    def _exited(self, session_id: str, live: LiveBrain, event: BrainExited) -> None:
        self.permissions.close_pending(
            session_id,
            status="cancelled",
            source="cancel",
            message="The backend process ended before this request was answered.",
        )
        if self._live.get(session_id) is live:
            del self._live[session_id]
        # Nothing will take a waiting message now; it is dropped where the user sees it.
        if not live.restarting:
            self._drop_queue(session_id)
        unexpected = not event.expected and not live.stopping
        status = "failed" if unexpected else "idle"
        if store.get_session(self._engine, session_id).status == "interrupted":
            status = "interrupted"
        store.update_session(self._engine, session_id, status=status, backend_pid=None)

    async def _deliver(self, session_id: str, request_id: str, answer: PermissionAnswer) -> None:
        live = self._live.get(session_id)
        if live is not None:
            await live.brain.answer_permission(request_id, answer)
        if self.permissions.pending_count(session_id):
            return
        if live is not None:
            self._set_status(session_id, "working" if live.turn_active else "live")
        await self._send_queued(session_id)

    def _drop_queue(self, session_id: str) -> None:
        self.outbox.drop_all(session_id)

    def _set_status(self, session_id: str, status: str) -> None:
        chat = store.get_session(self._engine, session_id)
        if chat.status != status:
            store.update_session(self._engine, session_id, status=status)
            self.events.append(session_id, "status", {"status": status})

    async def _reap_idle_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.idle_check_interval_s)
            await self.reap_idle()

    async def reap_idle(self) -> list[str]:
        """Stop brains idle longer than the setting; they resume on the next message."""
        now = time.monotonic()
        stale = [
            sid
            for sid, live in self._live.items()
            if not live.turn_active
            and not self.permissions.pending_count(sid)
            and now - live.last_activity > self.settings.idle_timeout_s
        ]
        for sid in stale:
            await self.stop_brain(sid)
        return stale


__all__ = ["BrainFailure", "SessionManager"]
