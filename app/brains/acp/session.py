"""The protocol layer of the ACP brain: one SDK connection and the session behind it.

``AcpSession`` knows the ACP requests (``initialize``, ``session/new`` / ``resume`` /
``load``, modes, config options, ``prompt``, ``cancel``) and where each
``session/update`` goes; it knows nothing of processes, turns or permissions, which
stay with the brain (``answers`` reads a ``session/prompt`` answer for it). Which
mode, model and effort a session runs with is decided in ``choices``, which asks
for them through ``switch_mode``, ``set_option`` and ``control``.

Updates are routed by session id. Until ``session/new`` has answered, the id is not
known and updates are kept, not dropped (some agents announce their commands first).
While ``session/load`` replays the conversation, updates only refresh state: the app
has shown that history already. The replay should come before the load's answer, but an
agent may still be sending it afterwards (gemini-cli 0.61 streams it from a task it does
not wait for), so the replay counts as over only once the updates pause.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from acp import (
    PROTOCOL_VERSION,
    Client,
    RequestError,
    connect_to_agent,
    image_block,
    text_block,
)
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    PromptResponse,
    SessionModeState,
)

from app import __version__
from app.brains.acp import choices
from app.brains.acp.answers import error_reason
from app.brains.acp.client import AcpClient, McpServer, ProcessTransport, acp_mcp_servers
from app.brains.acp.mentions import resource_blocks
from app.brains.acp.models import AgentModels, agent_models
from app.brains.acp.modes import ASKING_MODE
from app.brains.acp.steer import advertises_steering
from app.brains.acp.updates import ConfigOption, SessionUpdate, UpdateMapper, select_values
from app.brains.base import BrainConfig, ImageData
from app.brains.events import (
    BackendSession,
    BrainEvent,
    ModelsOffered,
)
from app.errors import BrainError as BrainFailure
from app.errors import BrainStartError

log = logging.getLogger(__name__)

# ASKING_MODE (now in modes) stays importable from here.
__all__ = ["ASKING_MODE", "AUTH_REQUIRED", "RESOURCE_NOT_FOUND", "AcpSession"]

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
T = TypeVar("T")


class AcpSession:
    """One agent connection and its session.

    Args:
        label: The agent's name in messages.
        cwd: The session's absolute working directory.
        mapper: Folds updates into events and holds the session's state.
        emit: Where events go (the brain's queue).
        control_timeout: How long a mode or config switch may take.
        replay_quiet: After ``session/load`` has answered, how long updates must pause
            before the replay counts as over.
        replay_limit: The longest that wait may take.
    """

    def __init__(
        self,
        *,
        label: str,
        cwd: str,
        mapper: UpdateMapper,
        emit: Callable[[BrainEvent], None],
        control_timeout: float = 30.0,
        replay_quiet: float = 0.3,
        replay_limit: float = 5.0,
    ) -> None:
        self.label = label
        self.cwd = cwd
        self.mapper = mapper
        self.control_timeout = control_timeout
        self.replay_quiet = replay_quiet
        self.replay_limit = replay_limit
        self.session_id: str | None = None
        self.capabilities = AgentCapabilities()
        self.auth_methods: list[str] = []
        self.modes: SessionModeState | None = None
        self.listed_models: AgentModels | None = None
        self.steering = False
        self.emit = emit
        self._conn: ClientSideConnection | None = None
        self._early: list[tuple[str, SessionUpdate]] = []
        self._loading = False
        self._last_replayed = 0.0

    @property
    def conn(self) -> ClientSideConnection:
        if self._conn is None:
            raise BrainFailure(f"{self.label} has not been started.")
        return self._conn

    @property
    def loading(self) -> bool:
        """Whether ``session/load`` is replaying history right now."""
        return self._loading

    @property
    def available_modes(self) -> tuple[str, ...]:
        """The agent's own mode ids (empty if it has none)."""
        if self.modes is not None:
            return tuple(mode.id for mode in self.modes.available_modes)
        option = self.mapper.mode_option()
        return select_values(option) if option is not None else ()

    def connect(self, client: AcpClient, transport: ProcessTransport) -> None:
        # A plain class on purpose (see client); the SDK looks handlers up by name.
        self._conn = connect_to_agent(cast(Client, client), transport)

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()

    def sid(self) -> str:
        if self.session_id is None:
            raise BrainFailure(f"{self.label} has no session yet.")
        return self.session_id

    # -- opening ---------------------------------------------------------------------------
    async def open(
        self,
        config: BrainConfig,
        *,
        path: str | None,
        resume_methods: Sequence[str],
        mode: str,
        apply_profile: bool,
        model_on_argv: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """``initialize``, then a new or reopened session in ``mode`` (an agent mode id);
        ``meta`` goes as ``_meta`` with the request that opens it.

        Raises:
            BrainStartError: The agent speaks another protocol version, cannot reopen
                the session, or cannot take the profile's MCP servers.
            RequestError: The agent refused a request (e.g. it needs a login).
        """
        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=False,
            ),
            client_info=Implementation(name="angelia", title="Angelia", version=__version__),
        )
        if init.protocol_version != PROTOCOL_VERSION:
            raise BrainStartError(
                f"{self.label} speaks ACP version {init.protocol_version}; Angelia speaks "
                f"version {PROTOCOL_VERSION}. Install a version of the agent that speaks it."
            )
        self.capabilities = init.agent_capabilities or AgentCapabilities()
        self.auth_methods = [method.name for method in init.auth_methods or []]
        self.listed_models = agent_models(init.field_meta)
        self.steering = advertises_steering(init.field_meta)
        servers = acp_mcp_servers(
            config.mcp_servers,
            self.capabilities.mcp_capabilities,
            agent=self.label,
            path=path,
        )
        if config.fork:
            raise BrainStartError(f"{self.label} cannot fork a session.")
        extra = dict(meta or {})
        if config.backend_session_id:
            await self._reopen(config.backend_session_id, servers, resume_methods, extra)
        else:
            response = await self.conn.new_session(cwd=self.cwd, mcp_servers=servers, **extra)
            self._state(response.modes, response.config_options)
            self.session_id = response.session_id
            self.emit(BackendSession(backend_session_id=response.session_id))
            early, self._early = self._early, []
            for session_id, update in early:
                self.route(session_id, update)
        await choices.apply_choices(
            self, config, mode=mode, options=apply_profile, model_on_argv=model_on_argv
        )

    async def _reopen(
        self,
        session_id: str,
        servers: list[McpServer],
        methods: Sequence[str],
        meta: dict[str, Any],
    ) -> None:
        session_caps = self.capabilities.session_capabilities
        self.session_id = session_id
        for method in methods:
            if method == "resume" and session_caps is not None and session_caps.resume is not None:
                resumed = await self.conn.resume_session(
                    session_id=session_id, cwd=self.cwd, mcp_servers=servers, **meta
                )
                self._state(resumed.modes, resumed.config_options)
                return
            if method == "load" and self.capabilities.load_session:
                self._loading = True
                try:
                    loaded = await self.conn.load_session(
                        session_id=session_id, cwd=self.cwd, mcp_servers=servers, **meta
                    )
                    await self._replay_over()
                finally:
                    self._loading = False
                self._state(loaded.modes, loaded.config_options)
                return
        raise BrainStartError(
            f"{self.label} cannot continue session {session_id}: it offers neither "
            "session/resume nor session/load. Start a new chat with this profile."
        )

    async def _replay_over(self) -> None:
        """Wait until replayed updates have paused for ``replay_quiet`` s (at most
        ``replay_limit`` s), so a replay sent after the load's answer is not taken live."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.replay_limit
        self._last_replayed = loop.time()
        while (now := loop.time()) < deadline:
            quiet_at = self._last_replayed + self.replay_quiet
            if now >= quiet_at:
                return
            await asyncio.sleep(min(quiet_at, deadline) - now)

    def _state(
        self, modes: SessionModeState | None, options: Sequence[ConfigOption] | None
    ) -> None:
        self.modes = modes
        if options is not None:
            self.mapper.config_options = list(options)
        if modes is not None:
            self.mapper.mode_id = modes.current_mode_id
        elif (option := self.mapper.mode_option()) is not None:
            self.mapper.mode_id = option.current_value

    def models_offered(self) -> ModelsOffered | None:
        """The agent's model choices, from its ``model`` config option or model list."""
        return choices.models_offered(self)

    async def set_model(self, model: str) -> None:
        """Select ``model`` (``choices.set_model`` says how)."""
        await choices.set_model(self, model)

    # -- requests ----------------------------------------------------------------------------
    async def switch_mode(self, mode_id: str) -> None:
        """Switch with ``session/set_mode``, or the mode config option if that is all."""
        option = self.mapper.mode_option()
        if self.modes is None and option is not None:
            await self.set_option(option.id, mode_id, f"mode {mode_id!r}")
        else:
            request = self.conn.set_session_mode(session_id=self.sid(), mode_id=mode_id)
            await self.control(request, f"mode {mode_id!r}")
        self.mapper.mode_id = mode_id

    async def prompt(self, text: str, images: Sequence[ImageData] = ()) -> PromptResponse:
        caps = self.capabilities.prompt_capabilities
        # Without embedded context the agent gets mentioned files as paths in the text.
        embedded = caps is not None and caps.embedded_context
        resources = await asyncio.to_thread(resource_blocks, text, self.cwd) if embedded else []
        return await self.conn.prompt(
            session_id=self.sid(),
            prompt=[
                *([text_block(text)] if text else []),
                *(image_block(i.base64(), i.media_type) for i in images),
                *resources,
            ],
        )

    async def cancel(self) -> None:
        await self.conn.cancel(session_id=self.sid())

    async def set_option(self, config_id: str, value: str, what: str) -> None:
        """Set one of the agent's config options; its reply updates them all."""
        request = self.conn.set_config_option(
            config_id=config_id, session_id=self.sid(), value=value
        )
        reply = await self.control(request, what)
        self.mapper.config_options = list(reply.config_options)

    async def extension(self, method: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        """An extension request of the agent's own (``_<method>``); its answer."""
        return await self.control(self.conn.ext_method(method, params), what)

    async def control(self, request: Awaitable[T], what: str) -> T:
        """Await a request about ``what``, within ``control_timeout``; a refusal, a
        timeout or a lost agent becomes a ``BrainError`` that says so."""
        try:
            return await asyncio.wait_for(request, self.control_timeout)
        except RequestError as exc:
            raise BrainFailure(f"{self.label} refused {what}: {error_reason(exc)}") from None
        except TimeoutError:
            raise BrainFailure(f"{self.label} did not answer about {what} in time.") from None
        except ConnectionError:
            raise BrainFailure(f"{self.label} is not running.") from None

    # -- updates -----------------------------------------------------------------------------
    def route(self, session_id: str, update: SessionUpdate) -> None:
        if self.session_id is None:
            self._early.append((session_id, update))
        elif session_id != self.session_id:
            log.debug("%s: update for unknown session %s", self.label, session_id)
        elif self._loading:
            self._last_replayed = asyncio.get_running_loop().time()
            self.mapper.absorb(update)
        else:
            for event in self.mapper.apply(update):
                self.emit(event)

    def request_failed(self, what: str, exc: RequestError, install_hint: str) -> str:
        """The user's message for an error answer to one of our requests."""
        if exc.code == AUTH_REQUIRED:
            how = f" ({', '.join(self.auth_methods)})" if self.auth_methods else ""
            return f"{self.label} needs you to log in first{how}. {install_hint}"
        return f"{self.label} could not {what}: {error_reason(exc)} ({exc.code})."
