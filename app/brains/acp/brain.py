"""Any Agent Client Protocol agent as a brain, on the official ``agent-client-protocol`` SDK.

Layers: ``AgentProcess`` owns the child (own process group, death signal, drained
stderr), ``AcpSession`` speaks the protocol through the SDK's connection,
``TurnRunner`` (``turns``) runs the turns, ``PermissionDesk`` (``questions``)
asks the user the agent's permission questions, and this brain starts and stops it all
and decides which questions may be asked (``modes`` maps the app's permission modes
to the agent's). Start-up is ``initialize`` →
``session/new`` (or ``session/resume`` / ``session/load`` for a known session) → the
profile's permission mode; each ``send()`` is one ``session/prompt``, queued behind
the one in flight, and ``interrupt()`` is ``session/cancel``.

The catalog (``catalog.toml``) turns this class into one brain per known agent;
``acp`` itself is the generic one, whose command comes from the profile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from app.brains.acp.modes import APP_KEPT_MODES, agent_mode, kept_by_app, require_mode
from app.brains.acp.steer import steer_turn
from app.brains.base import (
    Brain,
    BrainConfig,
    BrainFacts,
    Capability,
    ImageData,
    PermissionAnswer,
    steer_refusal,
)
from app.brains.events import (
    BrainError,
    BrainEvent,
    BrainExited,
    ModeChanged,
    SteerLanded,
)
from app.errors import AppError, BrainStartError
from app.errors import BrainError as BrainFailure
from app.transport import AgentProcess, build_env, describe_exit

if TYPE_CHECKING:
    from acp.schema import PermissionOption as AcpPermissionOption
    from acp.schema import RequestPermissionResponse, ToolCallUpdate

    from app.brains.acp.client import ProcessTransport
    from app.brains.acp.updates import ConfigOption, SessionUpdate

log = logging.getLogger(__name__)

# APP_KEPT_MODES stays importable from here: the catalog's brains name it.
__all__ = ["APP_KEPT_MODES", "AcpBrain"]


class AcpBrain(Brain):
    """An ACP agent over stdio; a catalog row sets the class attributes per agent."""

    name = "acp"
    label = "ACP agent"
    executable = ""
    install_hint = "Set the profile's command to the agent's ACP launch command."
    instructions_file = "AGENTS.md"
    facts = BrainFacts(
        resume="session/new returns the id; session/resume (or session/load, whose history "
        "replay is not shown twice) reattaches to it in a new process.",
        permission_prompt="session/request_permission arrives as a JSON-RPC request with "
        "allow/reject options; the chosen option id is the answer.",
        process_lifetime="One process per chat session serving many turns, one "
        "session/prompt each; session/cancel stops a turn.",
    )
    capabilities = frozenset(
        {
            Capability.DENY_SINGLE_TOOL,
            Capability.PER_SESSION_MCP,
            Capability.PERMISSION_PROMPTS,
            Capability.RESUME,
            Capability.SET_MODE_MID_SESSION,
            Capability.INTERRUPT,
        }
    )
    # Catalog data: the launch command when the profile has none, extra environment, the
    # app's permission mode names → the agent's mode ids, why a capability is missing.
    default_argv: ClassVar[tuple[str, ...]] = ()
    catalog_env: ClassVar[Mapping[str, str]] = {}
    mode_map: ClassVar[Mapping[str, str]] = {}
    limits: ClassVar[Mapping[Capability, str]] = {}
    # True for agents whose own modes cannot be used: the app keeps ``permission_modes``
    # (APP_KEPT_MODES) itself by answering every question (rules, then bypassPermissions
    # allows all), so a switch tells the agent nothing.
    app_keeps_modes: ClassVar[bool] = False
    quirks: ClassVar[str] = ""
    # How a known session is reopened, in order of preference.
    resume_methods: ClassVar[tuple[str, ...]] = ("resume", "load")
    flush_text_on_tool_call: ClassVar[bool] = False
    # Whether the profile's model and effort go through config options (a brain that
    # passes them on the command line says no).
    config_from_profile: ClassVar[bool] = True
    # The flag that puts the profile's model on the command line instead ("": none).
    model_flag: ClassVar[str] = ""
    # Close the tool calls the agent leaves open when its turn ends (some never send the
    # final update of a call), so none stays running in the transcript.
    close_open_tools: ClassVar[bool] = False

    ready_timeout: float = 60.0
    control_timeout: float = 30.0
    close_timeout: float = 5.0
    cancel_timeout: float = 10.0

    def __init__(self, config: BrainConfig) -> None:
        # The SDK and its generated models load here, not at import: listing the backends
        # (``angelia doctor``, the backends page) needs only the class attributes.
        from app.brains.acp.client import AcpClient
        from app.brains.acp.questions import PermissionDesk
        from app.brains.acp.session import AcpSession
        from app.brains.acp.turns import AgentInfo, TurnRunner
        from app.brains.acp.updates import UpdateMapper

        super().__init__(config)
        self._process = AgentProcess(name=self.label, install_hint=self.install_hint)
        cwd = os.path.abspath(config.cwd)
        self._client = AcpClient(self, cwd)
        mapper = UpdateMapper(
            flush_text_on_tool_call=self.flush_text_on_tool_call,
            mode_names={agent: app for app, agent in self.mode_map.items()},
        )
        self._session = AcpSession(
            label=self.label,
            cwd=cwd,
            mapper=mapper,
            emit=self._emit,
            control_timeout=self.control_timeout,
        )
        self._mapper = mapper
        self._questions = PermissionDesk(mapper, self._emit)
        self._turns = TurnRunner(
            AgentInfo(self.label, self.install_hint, self._process.stderr_tail),
            self._session,
            mapper,
            emit=self._emit,
            cancel_permissions=self._questions.cancel_all,
            close_open_tools=self.close_open_tools,
        )
        self._transport: ProcessTransport | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        self._started = False
        self._stopping = False
        # The session's mode as the app sees it (the agent may sit in its asking mode).
        self._mode = config.permission_mode

    # -- properties --------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def session_id(self) -> str | None:
        """The agent's session id, once ``session/new`` (or a resume) has returned."""
        return self._session.session_id

    @property
    def config_options(self) -> list[ConfigOption]:
        """The agent's session config options as last reported (models, modes, …)."""
        return list(self._mapper.config_options)

    @property
    def available_modes(self) -> tuple[str, ...]:
        """The agent's own mode ids (empty if it has none)."""
        return self._session.available_modes

    @property
    def current_mode(self) -> str | None:
        """The agent's current mode id, if it has modes."""
        return self._mapper.mode_id

    def build_argv(self) -> list[str]:
        """The agent's command line: the profile's command, else the catalog's."""
        argv = list(self.config.command or self.default_argv)
        if not argv:
            raise BrainStartError(
                f"{self.label} has no command to run: set the profile's command to the "
                "agent's ACP launch command (for example: opencode acp)."
            )
        if self.model_flag and self.config.model:
            argv += [self.model_flag, self.config.model]
        return argv

    def launch_env(self) -> dict[str, str]:
        """The environment the agent gets on top of the app's: the catalog's, then the
        profile's. Called once per start, before the agent is spawned."""
        return {**self.catalog_env, **self.config.env}

    def session_meta(self) -> dict[str, Any]:
        """The ``_meta`` of the request that opens the session (none by default)."""
        return {}

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Spawn the agent and open its session.

        Raises:
            AgentNotFoundError: The agent's executable is not installed.
            BrainStartError: It failed, refused or did not answer before it was ready.
        """
        if self._started:
            return
        self._started = True
        env = build_env(os.environ, self.launch_env())
        await self._process.start(self.build_argv(), cwd=self._session.cwd, env=env)
        from app.brains.acp.client import ProcessTransport

        self._transport = ProcessTransport(self._process, room=self._room)
        self._session.connect(self._client, self._transport)
        self._watcher = asyncio.create_task(self._watch())
        opening = self._session.open(
            self.config,
            path=env.get("PATH"),
            resume_methods=self.resume_methods,
            mode=self.mode_map.get(self.config.permission_mode, self.config.permission_mode),
            apply_profile=self.config_from_profile,
            model_on_argv=bool(self.model_flag),
            meta=self.session_meta(),
        )
        try:
            await asyncio.wait_for(opening, self.ready_timeout)
        except BaseException as exc:
            await self._abort()
            message = self._start_failure(exc)
            if message is None:
                raise
            raise BrainStartError(message, detail=self._process.stderr_tail()) from None
        self._runner = asyncio.create_task(self._turns.run())

    def accepts_images(self) -> bool:
        caps = self._session.capabilities.prompt_capabilities
        return bool(caps is not None and caps.image)

    async def send(
        self, text: str, *, images: Sequence[ImageData] = (), message_id: str = ""
    ) -> None:
        if self._runner is None or self._stopping or not self._process.running:
            raise BrainFailure(
                f"{self.label} is not running; send the message again to restart it."
            )
        self._turns.queue(text, images)

    async def interrupt(self) -> None:
        """Cancel the current turn (``session/cancel``); queued messages are dropped."""
        await self._turns.interrupt(self.cancel_timeout)

    async def stop(self, grace: float | None = None) -> None:
        """Close stdin, allow ``grace`` (or ``close_timeout``) s to exit, then kill the group."""
        self._stopping = True
        if self._watcher is None:
            self._close_events()
            return
        self._questions.cancel_all()
        await self._process.close(self.close_timeout if grace is None else grace)
        await asyncio.shield(self._watcher)

    async def answer_permission(self, request_id: str, answer: PermissionAnswer) -> None:
        """Answer one ``session/request_permission``; repeats and unknown ids are ignored."""
        if not self._questions.answer(request_id, answer):
            log.info("ignoring an answer to unknown permission request %s", request_id)
            return
        if answer.choice == "deny_stop":
            await self.interrupt()

    async def set_permission_mode(self, mode: str) -> None:
        """Switch the agent's mode (``session/set_mode`` or the mode config option).

        Raises:
            ValidationFailed: The agent has no mode for ``mode``; lists the ones it has.
        """
        if self.app_keeps_modes:
            # The app answers the agent's questions by the session's mode: nothing to tell it.
            require_mode(self.label, mode, mode, self.permission_modes)
            self._mode = mode
            return
        target = agent_mode(self.label, mode, self.mode_map, self.available_modes)
        self._mode = mode
        await self._session.switch_mode(target)

    def _emit(self, event: BrainEvent) -> None:
        if isinstance(event, ModeChanged) and kept_by_app(
            self._mode, self.mode_map, self.available_modes
        ):
            # The agent moved to its asking mode for a mode the app keeps: the session's
            # mode is still the app's.
            return
        super()._emit(event)

    async def set_model(self, model: str) -> None:
        await self._session.set_model(model)

    def steer_limit(self) -> str:
        # Known once the agent has answered initialize (steer says how it is offered).
        return "" if self._session.steering else steer_refusal(self.label)

    async def steer(self, text: str, *, message_id: str) -> None:
        if not self._session.steering:
            raise NotImplementedError(self.steer_limit())
        await steer_turn(self._session, text, running=self._turns.active)
        # The agent has it in the turn now; its model reads it with the next request.
        self._emit(SteerLanded(message_id=message_id, text=text))

    # -- agent → brain (the client's host) ----------------------------------------------
    def on_session_update(self, session_id: str, update: SessionUpdate) -> None:
        self._session.route(session_id, update)

    async def on_permission_request(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        from acp import RequestError

        from app.brains.acp.client import CANCELLED
        from app.brains.acp.questions import allows

        if session_id != self._session.session_id:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown"})
        if self._turns.cancel_requested or self._session.loading or self._stopping:
            return CANCELLED
        response = await self._questions.ask(tool_call, options)
        if not allows(response, options):
            self._turns.refused(tool_call.tool_call_id)
        return response

    def on_refused(self, message: str) -> None:
        self._emit(BrainError(message=message))

    def on_extension(self, method: str, params: dict[str, Any]) -> None:
        """An agent-specific notification; ignored unless a subclass knows its agent."""

    # -- start-up failures and exit ---------------------------------------------------------
    def _start_failure(self, exc: BaseException) -> str | None:
        """The user's message for an exception during start-up (None: re-raise it)."""
        from acp import RequestError

        from app.brains.acp.session import RESOURCE_NOT_FOUND

        if isinstance(exc, AppError):
            return exc.message
        if isinstance(exc, TimeoutError):
            return f"{self.label} did not get ready within {self.ready_timeout:g} s."
        if isinstance(exc, ConnectionError):
            return self._exit_message()
        if isinstance(exc, RequestError):
            resumed = self.config.backend_session_id
            if resumed and exc.code == RESOURCE_NOT_FOUND:
                return (
                    f"{self.label} cannot continue session {resumed}: it does not know it "
                    "(any more). Start a new chat with this profile."
                )
            return self._session.request_failed("start its session", exc, self.install_hint)
        return None

    async def _abort(self) -> None:
        self._stopping = True
        await self._process.close(self.close_timeout)
        if self._watcher is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._watcher)

    async def _watch(self) -> None:
        assert self._transport is not None
        await self._transport.eof.wait()
        # stdout is closed: the agent is exiting or useless, so make sure it is gone.
        code = await self._process.close(self.close_timeout)
        # A turn answered before EOF still ends normally; an unanswered one fails fast
        # because the SDK rejects requests in flight once the stream has ended.
        await self._turns.idle.wait()
        mid_turn = self._turns.pending
        expected = self._stopping or (code == 0 and not mid_turn)
        message = self._exit_message()
        if self._runner is not None:
            self._runner.cancel()
        self._questions.cancel_all()
        await self._session.close()
        tail = self._process.stderr_tail()
        self._emit_all(self._mapper.flush())
        if not expected:
            self._emit(BrainError(message=message, detail=tail, fatal=True))
        self._emit(BrainExited(exit_code=code, expected=expected, stderr_tail=tail))
        self._close_events()

    def _exit_message(self) -> str:
        how = describe_exit(self._process.returncode)
        when = " in the middle of a turn" if self._turns.active else ""
        return f"{self.label} {how}{when}."

    def _emit_all(self, events: Sequence[BrainEvent]) -> None:
        for event in events:
            self._emit(event)
