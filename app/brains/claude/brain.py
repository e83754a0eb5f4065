"""Claude Code over stream-json: one long-lived ``claude`` process per chat session.

The process reads user messages and control frames on stdin and stays up between turns;
permission prompts arrive as ``can_use_tool`` control requests because it runs with
``--permission-prompt-tool stdio``. A session is pinned with ``--session-id`` on the
first start and continued with ``--resume`` after that.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from app.brains import register
from app.brains.base import (
    Brain,
    BrainConfig,
    BrainFacts,
    Capability,
    ImageData,
    PermissionAnswer,
    RewindResult,
)
from app.brains.claude.control import ControlRequests
from app.brains.claude.prompts import answer_frame
from app.brains.claude.protocol import (
    ClaudeStreamParser,
    ControlReply,
    Outgoing,
    Parsed,
    PermissionPrompt,
    SessionReported,
    UserEchoed,
    offered_commands,
    offered_models,
)
from app.brains.claude.steer import SteerBook
from app.brains.claude.wire import (
    command_line,
    initialize_request,
    interrupt_request,
    mcp_config,
    rewind_files_request,
    set_model_request,
    set_permission_mode_request,
    user_message,
)
from app.brains.events import (
    BackendSession,
    BrainError,
    BrainExited,
    JsonDict,
    PermissionCancelled,
    TurnEnded,
)
from app.brains.private_files import private_file
from app.errors import BrainError as BrainFailure
from app.errors import BrainStartError, ConflictError, ProtocolError, ValidationFailed
from app.transport import AgentProcess, ProcessNotRunningError, build_env, describe_exit

log = logging.getLogger(__name__)

__all__ = ["ClaudeBrain"]

# The CLI keeps a copy of each file before its tools change it, per user message.
CHECKPOINT_ENV = {"CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"}


@register
class ClaudeBrain(Brain):
    """Claude Code CLI driven through its stream-json and control protocol."""

    name = "claude"
    label = "Claude Code"
    executable = "claude"
    install_hint = "npm i -g @anthropic-ai/claude-code"
    instructions_file = "CLAUDE.md"
    facts = BrainFacts(
        resume="Started with --session-id=<uuid>, continued later with --resume=<uuid>; "
        "Claude Code keeps the transcript under ~/.claude/projects for the working directory.",
        permission_prompt="--permission-prompt-tool stdio: the CLI sends a can_use_tool "
        "control request on stdout and waits for the allow/deny answer on stdin.",
        process_lifetime="One process per chat session serving many turns; stdin stays "
        "open and the CLI idles between turns.",
    )
    capabilities = frozenset(
        {
            Capability.DENY_SINGLE_TOOL,
            Capability.PER_SESSION_MCP,
            Capability.PERMISSION_PROMPTS,
            Capability.RESUME,
            Capability.SET_MODE_MID_SESSION,
            Capability.INTERRUPT,
            Capability.FORK,
        }
    )

    # Claude Code's aliases: each resolves to the newest model of its family.
    known_models = (
        ("default", "Default (recommended)"),
        ("sonnet", "Sonnet"),
        ("opus", "Opus"),
        ("haiku", "Haiku"),
    )

    accepts_any_model = True
    steering = True

    ready_timeout: float = 60.0
    control_timeout: float = 10.0
    close_timeout: float = 5.0

    def __init__(self, config: BrainConfig) -> None:
        super().__init__(config)
        self._process = AgentProcess(name=self.label, install_hint=self.install_hint)
        self._parser = ClaudeStreamParser()
        self._reader: asyncio.Task[None] | None = None
        self._controls = ControlRequests(self._process)
        self._pending: dict[str, PermissionPrompt] = {}
        self._answered: set[str] = set()
        self._started = False
        self._stopping = False
        self._turns_in_flight = 0
        # Set by a granted interrupt: the CLI then ends the turn as error_during_execution,
        # which is the user's stop, not a failure.
        self._interrupted = False
        self._saw_init = False
        self._steers = SteerBook()
        self._restop: asyncio.Task[None] | None = None
        self._last_errors: tuple[str, ...] = ()
        # The id this process runs under; for a resumed session the app already knows it.
        self._session_id = config.backend_session_id or str(uuid.uuid4())
        self._announced = config.backend_session_id

    # -- properties ------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def backend_session_id(self) -> str:
        """The Claude Code session id this process uses (or the last one it reported)."""
        return self._session_id

    def build_argv(self, mcp_file: str | None = None) -> list[str]:
        """The command line for this session's ``claude`` process (``mcp_file``: the
        file holding the profile's MCP servers)."""
        return command_line(self.config, self.executable, self._session_id, mcp_file)

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn ``claude`` and wait until it answers the ``initialize`` request.

        Raises:
            AgentNotFoundError: ``claude`` (or the profile's command) is not installed.
            BrainStartError: The CLI exited or did not answer before it was ready.
        """
        if self._started:
            return
        self._started = True
        if not self.config.mcp_servers:
            reply = await self._spawn(None)
        else:
            # Measured with 2.1.332: the CLI reads the file once, before it answers
            # initialize, and never again (not for a tool call, a reconnect or a toggle of
            # the server), so the file is gone as soon as the process is ready.
            with private_file("angelia-claude-", "mcp-config.json", mcp_config(self.config)) as f:
                reply = await self._spawn(str(f))
        if not reply.ok:
            # Still a live CLI speaking the protocol; stdio permission prompts work without.
            log.warning("Claude Code refused initialize: %s", reply.error)
        else:
            for offered in (offered_models(reply.response), offered_commands(reply.response)):
                if offered is not None:
                    self._emit(offered)

    async def _spawn(self, mcp_file: str | None) -> ControlReply:
        """Start the process and wait for its answer to ``initialize``."""
        env = build_env(os.environ, {**CHECKPOINT_ENV, **self.config.env})
        await self._process.start(self.build_argv(mcp_file), cwd=self.config.cwd, env=env)
        self._reader = asyncio.create_task(self._read_loop())
        try:
            return await self._control(initialize_request, timeout=self.ready_timeout)
        except ProcessNotRunningError:
            await asyncio.shield(self._reader)
            raise BrainStartError(
                self._exit_message(), detail=self._process.stderr_tail()
            ) from None
        except ProtocolError as exc:
            await self.stop()
            raise BrainStartError(exc.message, detail=self._process.stderr_tail()) from None

    async def send(
        self, text: str, *, images: Sequence[ImageData] = (), message_id: str = ""
    ) -> None:
        self._turns_in_flight += 1
        pairs = [(i.media_type, i.base64()) for i in images]
        try:
            await self._process.write_json(user_message(text, pairs, message_id))
        except ProcessNotRunningError:
            self._turns_in_flight -= 1
            raise BrainFailure(
                "Claude Code is not running; send the message again to restart it."
            ) from None

    async def steer(self, text: str, *, message_id: str) -> None:
        """Write ``text`` into the running turn; ``steer`` says how it lands."""
        if self._turns_in_flight == 0:
            raise ConflictError("No turn is running; send the message as a new one.")
        # Known before the write: the CLI may echo it before this task runs again.
        self._steers.sent(message_id, text)
        try:
            await self._process.write_json(user_message(text, (), message_id))
        except ProcessNotRunningError:
            raise BrainFailure("Claude Code is not running; the message was not sent.") from None

    async def interrupt(self) -> None:
        """Ask the CLI to stop the current turn; a no-op when the process is gone."""
        if not self._process.running:
            return
        # Set before asking: the turn's result may come before the control reply.
        self._interrupted = self._turns_in_flight > 0
        try:
            reply = await self._control(interrupt_request)
        except ProcessNotRunningError:
            return
        if not reply.ok:
            self._interrupted = False
            raise BrainFailure(f"Claude Code could not interrupt the turn: {reply.error}")

    async def set_permission_mode(self, mode: str) -> None:
        if mode not in self.permission_modes:
            raise ValidationFailed("mode", f"must be one of {', '.join(self.permission_modes)}")
        reply = await self._control(lambda rid: set_permission_mode_request(rid, mode))
        if not reply.ok:
            raise BrainFailure(f"Claude Code refused permission mode {mode!r}: {reply.error}")

    def accepts_images(self) -> bool:
        return True

    async def rewind_files(self, message_id: str, *, dry_run: bool = False) -> RewindResult:
        """Restore files with ``rewind_files`` (the CLI's own file checkpoints)."""
        reply = await self._control(
            lambda rid: rewind_files_request(rid, message_id, dry_run=dry_run)
        )
        body = reply.response
        if not reply.ok or body.get("canRewind") is False:
            reason = reply.error or str(body.get("error") or "no checkpoint for that message")
            raise ConflictError(f"Claude Code cannot rewind the files: {reason}")
        files = body.get("filesChanged")
        return RewindResult(
            files=tuple(f for f in files if isinstance(f, str)) if isinstance(files, list) else (),
            insertions=_count(body.get("insertions")),
            deletions=_count(body.get("deletions")),
        )

    async def set_model(self, model: str) -> None:
        """Use ``model`` from the next request on (an alias such as "opus" or a full id)."""
        reply = await self._control(lambda rid: set_model_request(rid, model))
        if not reply.ok:
            raise BrainFailure(f"Claude Code refused model {model!r}: {reply.error}")

    async def stop(self, grace: float | None = None) -> None:
        """Close stdin, allow ``grace`` (or ``close_timeout``) s to exit, then kill the group."""
        self._stopping = True
        if self._reader is None:
            self._close_events()
            return
        await self._process.close(self.close_timeout if grace is None else grace)
        await asyncio.shield(self._reader)

    async def answer_permission(self, request_id: str, answer: PermissionAnswer) -> None:
        """Send the answer to one ``can_use_tool`` request.

        Exactly once per request: a repeated answer, an unknown id and a request the
        CLI has withdrawn are ignored quietly, because the CLI must never see two
        answers and the services layer already reports duplicate decisions to the user.
        """
        pending = self._pending.pop(request_id, None)
        if pending is None:
            level = logging.DEBUG if request_id in self._answered else logging.INFO
            log.log(level, "ignoring an answer to unknown permission request %s", request_id)
            return
        self._answered.add(request_id)
        if answer.choice == "deny_stop":
            self._interrupted = True
        try:
            await self._process.write_json(answer_frame(pending, answer))
        except ProcessNotRunningError:
            log.info("Claude Code exited before permission request %s was answered", request_id)

    # -- control requests ----------------------------------------------------------------
    async def _control(
        self, build: Callable[[str], JsonDict], *, timeout: float | None = None
    ) -> ControlReply:
        return await self._controls.ask(build, timeout or self.control_timeout)

    # -- reading -----------------------------------------------------------------------
    async def _read_loop(self) -> None:
        try:
            async for batch in self._process.message_batches():
                for message in batch:
                    try:
                        items = self._parser.parse(message)
                    except Exception:
                        log.exception("could not parse a Claude Code message: %.200r", message)
                        continue
                    for item in items:
                        if isinstance(item, Outgoing):
                            await self._send(item)
                        else:
                            self._handle(item)
                await self._room()
        except Exception:
            log.exception("reading from Claude Code failed; stopping it")
        # stdout is closed: the process is exiting or useless, so make sure it is gone.
        code = await self._process.close(self.close_timeout)
        self._exited(code)

    async def _send(self, item: Outgoing) -> None:
        try:
            await self._process.write_json(item.message)
        except ProcessNotRunningError:
            log.debug("Claude Code exited before a control reply could be sent")

    def _handle(self, item: Parsed) -> None:
        """Everything the CLI says but what needs an answer written back (``_send``)."""
        if isinstance(item, ControlReply):
            self._controls.replied(item)
        elif isinstance(item, PermissionPrompt):
            self._pending[item.event.request_id] = item
            self._emit(item.event)
        elif isinstance(item, SessionReported):
            self._saw_init = self._saw_init or item.source == "init"
            self._session_id = item.session_id
            if item.source == "init" and (landed := self._steers.turn_started()):
                self._emit(landed)
                if self._interrupted:
                    # Stopped while it waited: the CLI runs it all the same, so stop that too.
                    self._restop = asyncio.create_task(self.interrupt())
            if item.source == "init" and self._session_id != self._announced:
                # The CLI has taken the turn up and keeps its transcript under this id
                # from now on: recording it here lets a crash during the first turn resume.
                self._announced = self._session_id
                self._emit(BackendSession(backend_session_id=self._session_id))
        elif isinstance(item, PermissionCancelled):
            # Only prompts still waiting for the user; the CLI wants no reply to a cancel.
            if self._pending.pop(item.request_id, None) is not None:
                self._emit(item)
        elif isinstance(item, TurnEnded):
            if (whole := self._steers.turn_ended(item)) is not None:
                self._turn_ended(whole)
        elif isinstance(item, UserEchoed):
            if (landed := self._steers.echoed(item.message_id)) is not None:
                self._emit(landed)
        elif not isinstance(item, Outgoing):  # those go through _send
            self._emit(item)

    def _turn_ended(self, event: TurnEnded) -> None:
        self._turns_in_flight = max(self._turns_in_flight - 1, 0)
        if self._interrupted and event.stop_reason == "error_during_execution":
            # Reported as ACP agents report a stop, so every backend's stop reads the same.
            event = replace(event, stop_reason="cancelled", is_error=False, errors=())
        self._interrupted = False
        self._last_errors = event.errors if event.is_error else ()
        # A result without any init means the CLI never took the turn up (e.g. a failed
        # resume), so the id it reports names no stored conversation.
        took_turn = self._saw_init or not event.is_error
        if took_turn and self._session_id != self._announced:
            self._announced = self._session_id
            self._emit(BackendSession(backend_session_id=self._session_id))
        self._emit(event)

    def _exited(self, code: int | None) -> None:
        self._controls.exited()
        self._pending.clear()
        tail = self._process.stderr_tail()
        mid_turn = self._turns_in_flight > 0
        expected = self._stopping or (code == 0 and not mid_turn)
        if not expected:
            self._emit(BrainError(message=self._exit_message(), detail=tail, fatal=True))
        self._emit(BrainExited(exit_code=code, expected=expected, stderr_tail=tail))
        self._close_events()

    def _exit_message(self) -> str:
        how = describe_exit(self._process.returncode)
        when = " in the middle of a turn" if self._turns_in_flight > 0 else ""
        message = f"Claude Code {how}{when}."
        if self._last_errors:
            message += " " + "; ".join(self._last_errors)
        return message


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
