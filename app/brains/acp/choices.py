"""What an ACP session runs with: its mode, the profile's model and reasoning effort.

Once a session is open, ``apply_choices`` puts it in the wanted mode and selects the
profile's model and effort, through the agent's config options or, for an agent that
only lists its models (``models``), ``session/set_model``; a setting the agent cannot
take is said once as a ``BrainError`` rather than dropped unseen. ``set_model`` switches
the model later, at the user's request. The requests themselves go through
the session, which hands itself in as a ``ChoosingSession``: what these steps use of it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol, TypeVar

from app.brains.acp.models import AgentModels, option_models
from app.brains.acp.modes import ASKING_MODE
from app.brains.acp.updates import UpdateMapper, select_values
from app.brains.base import BrainConfig
from app.brains.events import BrainError, BrainEvent, ModelsOffered
from app.errors import ValidationFailed

if TYPE_CHECKING:
    # The SDK's own type only: loading the SDK stays with the session.
    from acp.client.connection import ClientSideConnection

log = logging.getLogger(__name__)

__all__ = ["ChoosingSession", "apply_choices", "models_offered", "set_model"]

T = TypeVar("T")


class ChoosingSession(Protocol):
    """What choosing a mode, model and effort needs of an open ACP session."""

    @property
    def label(self) -> str: ...
    @property
    def mapper(self) -> UpdateMapper: ...
    @property
    def listed_models(self) -> AgentModels | None: ...
    @property
    def available_modes(self) -> tuple[str, ...]: ...
    @property
    def conn(self) -> ClientSideConnection: ...
    def sid(self) -> str: ...
    def emit(self, event: BrainEvent, /) -> None: ...
    async def switch_mode(self, mode_id: str) -> None: ...
    async def set_option(self, config_id: str, value: str, what: str) -> None: ...
    async def control(self, request: Awaitable[T], what: str) -> T: ...


async def apply_choices(
    session: ChoosingSession,
    config: BrainConfig,
    *,
    mode: str,
    options: bool,
    model_on_argv: bool,
) -> None:
    """Put a session just opened in ``mode`` (an agent mode id) and select the profile's
    model and effort; ``options``: whether those go through config options at all.
    Ends by saying which models the agent offers."""
    await _apply_mode(session, mode)
    if options and not model_on_argv:
        await _apply_choice(session, "model", config.model)
    if options:
        await _apply_choice(session, "thought_level", config.reasoning_effort)
    await _apply_listed_model(session, config.model)
    if (offered := models_offered(session)) is not None:
        session.emit(offered)


def models_offered(session: ChoosingSession) -> ModelsOffered | None:
    """The agent's model choices, from its ``model`` config option or model list."""
    option = session.mapper.select_option("model")
    if option is None:
        listed = session.listed_models
        return listed.offered() if listed is not None else None
    return option_models(option)


async def set_model(session: ChoosingSession, model: str) -> None:
    """Select ``model`` through the agent's ``model`` config option (or its model list).

    Raises:
        ValidationFailed: The agent offers no model choice, or not this model.
    """
    option = session.mapper.select_option("model")
    listed = session.listed_models
    if option is None and listed is not None:
        if model not in listed.ids():
            raise ValidationFailed(
                "model",
                f"{session.label} has no model {model!r}; it offers: {', '.join(listed.ids())}",
            )
        await _switch_listed(session, listed, model)
        session.emit(listed.offered())
        return
    if option is None:
        raise ValidationFailed("model", f"{session.label} offers no model choice in a session")
    choices = select_values(option)
    if model not in choices:
        raise ValidationFailed(
            "model", f"{session.label} has no model {model!r}; it offers: {', '.join(choices)}"
        )
    await session.set_option(option.id, model, f"model {model!r}")
    if (offered := models_offered(session)) is not None:
        session.emit(offered)


async def _apply_mode(session: ChoosingSession, wanted: str) -> None:
    modes = session.available_modes
    if wanted in modes and wanted != session.mapper.mode_id:
        await session.switch_mode(wanted)
    elif modes and wanted not in modes:
        # The app keeps the mode by answering the agent's questions, so the agent must
        # ask: claude-agent-acp starts in "auto", which would run everything unasked.
        log.info("%s has no mode %r (it has %s)", session.label, wanted, ", ".join(modes))
        if ASKING_MODE in modes and session.mapper.mode_id != ASKING_MODE:
            await session.switch_mode(ASKING_MODE)


async def _apply_choice(session: ChoosingSession, category: str, value: str | None) -> None:
    """Select the profile's model (or effort) if the agent has such a config option."""
    option = session.mapper.select_option(category)
    if value and option is None and not (category == "model" and session.listed_models):
        # Said once, at the start, so a profile setting is never dropped unseen.
        what = "model" if category == "model" else "reasoning effort"
        session.emit(
            BrainError(
                message=f"{session.label} offers no {what} choice, so the profile's "
                f"{what} {value!r} is not used."
            )
        )
        return
    if not value or option is None or option.current_value == value:
        return
    choices = select_values(option)
    if value not in choices:
        session.emit(
            BrainError(
                message=f"{session.label} has no {option.name.lower()} {value!r}; it keeps "
                f"{option.current_value!r}. It offers: {', '.join(choices)}."
            )
        )
        return
    await session.set_option(option.id, value, f"{option.name.lower()} {value!r}")


async def _apply_listed_model(session: ChoosingSession, model: str | None) -> None:
    # Even when the profile's model went on the command line: a reopened session
    # keeps the model it had, so a later choice has to be asked for again.
    listed = session.listed_models
    if not model or listed is None or session.mapper.select_option("model") is not None:
        return
    if model not in listed.ids():
        session.emit(
            BrainError(
                message=f"{session.label} has no model {model!r}; it keeps "
                f"{listed.current!r}. It offers: {', '.join(listed.ids())}."
            )
        )
    elif model != listed.current:
        await _switch_listed(session, listed, model)


async def _switch_listed(session: ChoosingSession, listed: AgentModels, model: str) -> None:
    """``session/set_model`` for an agent that lists its models."""
    await session.control(listed.switch(session.conn, session.sid(), model), f"model {model!r}")
