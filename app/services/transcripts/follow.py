"""Following a Claude Code session live while a terminal's CLI writes its transcript.

The session's page asks for it; from then on every change the OS reports for the file
(inotify through ``watchfiles``, no polling) imports what the CLI added into the app's
session, whose event stream shows it like any other. A following ends when the app
stops, when the user continues the session here, or once the file has been quiet for
``idle_s`` and no ``claude`` runs in its folder any more; then the last turn is closed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine
from watchfiles import Change, awatch

from app.errors import ConflictError
from app.services.store.eventlog import EventLog
from app.services.transcripts import importer, terminal
from app.services.transcripts.claude_reader import is_session_id
from app.services.transcripts.importer import FileReport, TranscriptImport

log = logging.getLogger(__name__)

__all__ = ["Follower", "find_transcript"]

# A line the CLI writes is shown this soon; writes closer together are read at once.
DEBOUNCE_MS = 100
# How often the watcher wakes up without a change, to see whether the session ended.
CHECK_MS = 5_000
# Quiet this long with no CLI in the folder: the terminal session is over.
IDLE_S = 300.0
# Files followed at once, so an open tab per old session cannot pile up watchers.
LIMIT = 32
# How long a stop waits for a watcher to end (each checks its stop flag every 50 ms).
STOP_TIMEOUT_S = 2.0


def find_transcript(projects: Path, backend_session_id: str) -> Path | None:
    """The transcript ``<projects>/<folder>/<id>.jsonl`` of a Claude Code session."""
    if not is_session_id(backend_session_id) or not projects.is_dir():
        return None
    return next((p for p in projects.glob(f"*/{backend_session_id}.jsonl") if p.is_file()), None)


@dataclass
class _Following:
    transcript: TranscriptImport
    cwd: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class Follower:
    def __init__(
        self,
        engine: Engine,
        events: EventLog,
        *,
        idle_s: float = IDLE_S,
        check_ms: int = CHECK_MS,
        proc: Path = terminal.PROC,
        own_groups: Callable[[], Collection[int]] = tuple,
    ) -> None:
        """``own_groups``: the process groups of the agents the app runs now; a
        ``claude`` of theirs is never taken for the terminal's."""
        self._engine, self._events = engine, events
        self._idle_s, self._check_ms, self._proc = idle_s, check_ms, proc
        self.own_groups = own_groups
        self._by_chat: dict[str, _Following] = {}
        self._closing = False

    def is_following(self, chat_id: str) -> bool:
        return chat_id in self._by_chat

    def following_ids(self) -> list[str]:
        """The sessions whose transcripts are followed now."""
        return list(self._by_chat)

    def cli_running(self, cwd: str) -> bool | None:
        """Whether a terminal's ``claude`` runs in ``cwd`` (None: this system cannot tell)."""
        folders = terminal.claude_folders(self._proc, own_groups=self.own_groups())
        return None if folders is None else bool(cwd) and cwd in folders

    async def follow(self, path: Path) -> FileReport:
        """Import what ``path`` holds that the app does not, and keep doing so as it grows.

        A file imported into a session continued here, or holding no conversation yet,
        is not followed: the report says why.
        """
        async with importer.lock(self._events):
            current = next((f for f in self._by_chat.values() if f.transcript.path == path), None)
            if current is not None:
                return await current.transcript.step(keep_open=True)
            transcript = TranscriptImport(self._engine, self._events, path)
            report = await transcript.step(keep_open=True)
            chat_id = transcript.chat_id
            if report.status == "skipped" or chat_id is None or self._closing:
                return report
            if len(self._by_chat) >= LIMIT:
                log.warning("not following %s: %d sessions are followed already", path, LIMIT)
                return report
            following = _Following(transcript, report.cwd)
            transcript.follow()
            self._by_chat[chat_id] = following
            following.task = asyncio.create_task(self._watch(chat_id, following))
            return report

    async def _watch(self, chat_id: str, following: _Following) -> None:
        path = following.transcript.path
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        caught_up = False
        running = self.cli_running(following.cwd)
        try:
            async for changes in awatch(
                path.parent,
                watch_filter=lambda _change, changed: Path(changed).name == path.name,
                stop_event=following.stop,
                debounce=DEBOUNCE_MS,
                rust_timeout=self._check_ms,
                yield_on_timeout=True,
                recursive=False,
            ):
                if any(change == Change.deleted for change, _ in changes):
                    break
                # The first wake-up also reads what was written before the watch began.
                if changes or not caught_up:
                    caught_up = True
                    quiet_since = loop.time()
                    async with importer.lock(self._events):
                        await following.transcript.step(keep_open=True)
                    continue
                # A quiet spell: has the terminal's CLI gone meanwhile?
                was_running, running = running, self.cli_running(following.cwd)
                if was_running and running is False:
                    await self._say_exited(chat_id)
                if loop.time() - quiet_since > self._idle_s and not running:
                    break
        except Exception:
            # A vanished folder or an unreadable file ends the following, never the app.
            log.exception("stopped following %s", path)
        finally:
            following.transcript.unfollow()
            self._by_chat.pop(chat_id, None)
        if not following.stop.is_set():
            await self._finish(following)

    async def _say_exited(self, chat_id: str) -> None:
        # Marked imported like the file's lines: it is not a turn of the app's, and a
        # later import or following of the file must still take the session for its own.
        note = {
            "text": "claude has exited in its terminal: Continue here to go on with it here.",
            "note": "terminal_exited",
            "imported": True,
            "uuid": f"terminal-exited:{uuid.uuid4()}",
        }
        self._events.append(chat_id, "note", note)
        await self._events.flush()

    async def _finish(self, following: _Following) -> None:
        """Import the rest and close the last turn: the CLI has let go of the file."""
        try:
            async with importer.lock(self._events):
                await following.transcript.step(keep_open=False)
        except OSError as exc:
            log.warning("could not read %s to the end: %s", following.transcript.path, exc)

    async def stop(self, chat_id: str, *, finish: bool = True) -> bool:
        """Stop following a session and (with ``finish``) import the rest; False if it
        was not followed. A session about to be deleted is stopped without ``finish``."""
        following = self._by_chat.get(chat_id)
        if following is None or following.task is None:
            return False
        following.stop.set()
        await asyncio.wait({following.task}, timeout=STOP_TIMEOUT_S)
        if finish:
            await self._finish(following)
        return True

    async def take_over(self, chat_id: str, cwd: str) -> bool:
        """End the following so the app can continue the session; False if none ran.

        A session imported from a terminal is taken over even when no following runs,
        so that opening its page does not start one again.

        Raises:
            ConflictError: a ``claude`` still runs in the session's folder.
        """
        if self.cli_running(cwd):
            raise ConflictError(
                f"claude still runs in {cwd}: quit it in its terminal first, "
                "then continue here again."
            )
        was_following = await self.stop(chat_id)
        ends = [
            *self._events.list(chat_id, limit=1),
            *self._events.list(chat_id, limit=1, newest=True),
        ]
        if not was_following and not (ends and all(e.get("imported") for e in ends)):
            # Never a terminal's, or the app's since (taken over already): nothing to do.
            return False
        # Not an imported event: from here on the session is the app's, and neither an
        # import nor a page load follows the file into it again (also when a following
        # had ended by itself, and the next page load would have started another).
        self._events.append(
            chat_id,
            "note",
            {"text": "Continued here: the terminal's CLI had ended.", "note": "continued"},
        )
        await self._events.flush()
        return was_following

    def begin_close(self) -> None:
        """Tell every watcher to stop (on the event loop's thread); no new ones start."""
        self._closing = True
        for following in self._by_chat.values():
            following.stop.set()

    async def close(self) -> None:
        self.begin_close()
        tasks = {f.task for f in self._by_chat.values() if f.task is not None}
        if tasks:
            _done, late = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for task in late:
                task.cancel()
