"""The brain contract: one backend subprocess per chat session, emitting typed events.

A brain class states the ADR's three facts (how a session resumes by id, how a
permission prompt arrives without a TTY, whether the process lives across turns) and
the capabilities it can enforce. The registry refuses profiles that ask for more.
"""

from __future__ import annotations

import asyncio
import base64
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from app.brains.events import BrainEvent, PermissionChoice

# Events a brain may hold for its consumer before its reader stops reading (``_room``).
EVENTS_HIGH = 1000

PERMISSION_MODES: tuple[str, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
)


class Capability(StrEnum):
    DENY_SINGLE_TOOL = "deny_single_tool"
    PER_SESSION_MCP = "per_session_mcp"
    PERMISSION_PROMPTS = "permission_prompts"
    RESUME = "resume"
    SET_MODE_MID_SESSION = "set_mode_mid_session"
    INTERRUPT = "interrupt"
    FORK = "fork"


@dataclass(frozen=True)
class BrainFacts:
    """The ADR's three facts, in words a user can read on the backends page."""

    resume: str
    permission_prompt: str
    process_lifetime: str


@dataclass(frozen=True)
class BrainConfig:
    """Everything a brain needs to start; built by the registry from profile + session."""

    session_id: str
    cwd: str
    backend_session_id: str | None = None
    model: str | None = None
    permission_mode: str = "default"
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    fork: bool = False
    reasoning_effort: str | None = None
    # A folder of the app's own for this session's backend state (``keeps_state`` brains
    # only; None: the backend's defaults). It outlives the process, so a resume finds it.
    state_dir: str | None = None


@dataclass(frozen=True)
class PermissionAnswer:
    """A decision about one ``PermissionAsked``; the brain turns it into wire format."""

    choice: PermissionChoice
    message: str = ""
    updated_input: dict[str, Any] | None = None
    option_id: str = ""
    # The permission mode to continue in (approving a plan).
    mode: str = ""

    @property
    def allowed(self) -> bool:
        return self.choice in ("allow_once", "allow_always")


@dataclass(frozen=True)
class ImageData:
    """An image the user attached to a message (already checked by the app)."""

    media_type: str
    data: bytes

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class RewindResult:
    """What restoring the files to before a message changes (or changed)."""

    files: tuple[str, ...] = ()
    insertions: int = 0
    deletions: int = 0


def steer_refusal(label: str) -> str:
    """What the user reads when ``label`` cannot take a message into a running turn."""
    return f"{label} cannot take a message while it works; queue it for when the turn ends."


class Brain(ABC):
    """One live backend process for one chat session.

    Lifecycle: ``start()`` once, then any number of ``send()``; ``events()`` yields every
    typed event until the process is gone (ending with ``BrainExited``). ``stop()`` is
    idempotent and kills the whole process group if a graceful close does not work.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    executable: ClassVar[str]
    install_hint: ClassVar[str]
    # ``install_hint`` split for a page: a command to copy and run ("": the hint is one),
    # and what else to do, shown beside it.
    install_command: ClassVar[str] = ""
    install_note: ClassVar[str] = ""
    instructions_file: ClassVar[str] = "AGENTS.md"
    # What a user must know before choosing the backend, such as a change in who can sign
    # in to it ("": nothing); ``angelia doctor`` and the welcome page show it.
    notice: ClassVar[str] = ""
    facts: ClassVar[BrainFacts]
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    permission_modes: ClassVar[tuple[str, ...]] = PERMISSION_MODES
    # Tools (Claude Code's names) the backend runs without asking: a deny rule naming
    # one could never be applied, so such rules are refused for it.
    runs_unasked: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def deny_refusal(cls, rule: str, tool: str, *, in_profile: bool) -> str | None:
        """Why a deny ``rule`` naming ``tool`` could never apply (None: it can);
        ``in_profile``: it is in the profile's own deny list, not a stored rule."""
        if tool in cls.runs_unasked:
            return (
                f"{cls.label} runs {tool} without asking, so Angelia cannot refuse it; "
                "deny rules for it are not accepted."
            )
        return None

    @classmethod
    def login_note(cls, env: Mapping[str, str]) -> str:
        """Which login a profile with ``env`` makes the backend use, in one sentence for a
        page, never a secret ("": the CLI's own, found as it finds it in a terminal)."""
        return ""

    # Models to offer before the backend has said which it has: (id, label) pairs.
    known_models: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Whether any model id is taken (not only the ones offered), e.g. on the command line.
    accepts_any_model: ClassVar[bool] = False
    # Whether the brain wants ``BrainConfig.state_dir``: a folder per session, under the
    # app's data folder, for a backend whose own home must not be shared between sessions.
    keeps_state: ClassVar[bool] = False
    # Why the backend can never take a profile's reasoning effort ("": it can, or says
    # at the start of a session that it could not).
    effort_limit: ClassVar[str] = ""
    # Whether a message can go into a running turn (``steer``); ``steer_limit`` says why
    # not, and may know more once the backend runs.
    steering: ClassVar[bool] = False

    def __init__(self, config: BrainConfig) -> None:
        self.config = config
        self._events: asyncio.Queue[BrainEvent | None] = asyncio.Queue()
        self._closed = False
        # Set each time the consumer takes what is queued (see ``_room``).
        self._taken = asyncio.Event()

    # -- events -----------------------------------------------------------------
    def _emit(self, event: BrainEvent) -> None:
        if not self._closed:
            self._events.put_nowait(event)

    def _close_events(self) -> None:
        if not self._closed:
            self._closed = True
            self._events.put_nowait(None)
            self._taken.set()

    async def _room(self) -> None:
        """Wait while ``EVENTS_HIGH`` events or more wait for the consumer: a reader that
        calls this between reads leaves an agent writing flat out waiting on a full pipe,
        rather than this process holding its flood in memory (the consumer, in turn,
        waits for the disk)."""
        while self._events.qsize() >= EVENTS_HIGH and not self._closed:
            self._taken.clear()
            await self._taken.wait()

    async def events(self) -> AsyncIterator[BrainEvent]:
        """Yield events until the brain has exited."""
        async for batch in self.event_batches():
            for event in batch:
                yield event

    async def event_batches(self) -> AsyncIterator[list[BrainEvent]]:
        """Yield, each time, every event that is ready (at least one) until the brain exits.

        A consumer that falls behind a fast stream gets bigger batches instead of a
        growing backlog, and can store them more cheaply.
        """
        while True:
            first = await self._events.get()
            if first is None:
                return
            batch = [first]
            while not self._events.empty():
                event = self._events.get_nowait()
                if event is None:
                    yield batch
                    return
                batch.append(event)
            self._taken.set()
            yield batch

    # -- operations ---------------------------------------------------------------
    @abstractmethod
    async def start(self) -> None:
        """Spawn the backend; raises ``AgentNotFoundError`` / ``BrainStartError``."""

    @abstractmethod
    async def send(
        self, text: str, *, images: Sequence[ImageData] = (), message_id: str = ""
    ) -> None:
        """Send one user message (one turn); ``message_id`` names it for a later rewind."""

    def accepts_images(self) -> bool:
        """Whether images can go with a message (known once the backend has started)."""
        return False

    def steer_limit(self) -> str:
        """Why a message cannot go into a running turn ("": it can, see ``steer``)."""
        return "" if self.steering else steer_refusal(self.label)

    async def steer(self, text: str, *, message_id: str) -> None:
        """Send ``text`` into the running turn; the model sees it at the next step.

        A brain that can reports where it landed with ``SteerLanded``; ``ConflictError``
        when no turn is running, ``NotImplementedError`` when the backend cannot steer.
        """
        raise NotImplementedError(self.steer_limit())

    async def rewind_files(self, message_id: str, *, dry_run: bool = False) -> RewindResult:
        """Restore the files the agent changed since the message ``message_id``.

        Raises ``NotImplementedError`` when the backend cannot.
        """
        raise NotImplementedError(f"{self.label} cannot restore files to an earlier message")

    @abstractmethod
    async def interrupt(self) -> None:
        """Stop the current turn; the process stays alive."""

    @abstractmethod
    async def stop(self, grace: float | None = None) -> None:
        """End the process (graceful close, then the process group is killed).

        ``grace`` bounds each step of the close (stdin EOF, then SIGTERM) in seconds;
        None means the brain's own default. A stopping server passes a short one.
        """

    @abstractmethod
    async def answer_permission(self, request_id: str, answer: PermissionAnswer) -> None:
        """Answer one pending ``PermissionAsked`` exactly once."""

    async def set_permission_mode(self, mode: str) -> None:
        """Switch the permission mode mid-session (only if the backend can)."""
        raise NotImplementedError(f"{self.name} cannot switch modes mid-session")

    async def set_model(self, model: str) -> None:
        """Switch the model for the next request (only if the backend can)."""
        raise NotImplementedError(f"{self.label} cannot switch models mid-session")

    @property
    def pid(self) -> int | None:
        """The backend process id (also its process-group id), if running."""
        return None

    @property
    def alive(self) -> bool:
        return not self._closed
