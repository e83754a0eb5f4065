"""Model choice for ACP agents that offer it as a model list, not as a config option.

ACP first had ``models`` in the ``session/new``/``session/load`` answers and a
``session/set_model`` request; later versions of the protocol (and the SDK's schema)
replaced both with a ``model`` config option. Grok Build 0.2.111 still serves only the
older form: its ``initialize`` answer carries the list in ``_meta.modelState``
(``currentModelId`` + ``availableModels[{modelId, name}]``), and ``session/set_model``
switches the next request's model. A session reopened with ``session/load`` keeps its
own model whatever ``-m`` says, so the choice is applied by request after opening too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acp.client.connection import ClientSideConnection
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectGroup

from app.brains.events import ModelsOffered

__all__ = ["AgentModels", "agent_models", "option_models"]

SET_MODEL = "session/set_model"


@dataclass
class AgentModels:
    """The models an agent lists, and the one in use."""

    models: tuple[tuple[str, str], ...]
    current: str

    def ids(self) -> tuple[str, ...]:
        return tuple(model_id for model_id, _ in self.models)

    def offered(self) -> ModelsOffered:
        return ModelsOffered(
            models=tuple({"id": i, "label": name, "description": ""} for i, name in self.models),
            current=self.current,
        )

    async def switch(self, conn: ClientSideConnection, session_id: str, model: str) -> None:
        """Send ``session/set_model``; the SDK's schema no longer has the request, so it
        goes out through the connection's JSON-RPC sender as a plain method call."""
        sender = conn._conn  # noqa: SLF001 - no public call for a method the SDK dropped
        await sender.send_request(SET_MODEL, {"sessionId": session_id, "modelId": model})
        self.current = model


def agent_models(meta: Mapping[str, Any] | None) -> AgentModels | None:
    """The model list from an ``initialize`` answer's ``_meta`` (None if it has none)."""
    state = (meta or {}).get("modelState")
    if not isinstance(state, Mapping):
        return None
    models = []
    for item in state.get("availableModels") or []:
        if isinstance(item, Mapping) and isinstance(item.get("modelId"), str):
            models.append((item["modelId"], str(item.get("name") or item["modelId"])))
    if not models:
        return None
    return AgentModels(models=tuple(models), current=str(state.get("currentModelId") or ""))


def option_models(option: SessionConfigOptionSelect) -> ModelsOffered:
    """The choices of an agent's ``model`` config option (groups flattened)."""
    models = []
    for item in option.options:
        for choice in item.options if isinstance(item, SessionConfigSelectGroup) else [item]:
            models.append(
                {"id": choice.value, "label": choice.name, "description": choice.description or ""}
            )
    return ModelsOffered(models=tuple(models), current=option.current_value)
