"""Brain registry: backend name → brain class.

Built-in backends register through the same ``register`` call a plugin would use.
"""

from __future__ import annotations

from app.brains.base import Brain, BrainConfig, BrainFacts, Capability, PermissionAnswer
from app.errors import UnknownBackendError

__all__ = [
    "Brain",
    "BrainConfig",
    "BrainFacts",
    "Capability",
    "PermissionAnswer",
    "available_backends",
    "get_brain_class",
    "register",
]

_BRAINS: dict[str, type[Brain]] = {}


def register(brain_cls: type[Brain]) -> type[Brain]:
    """Register a brain class under its ``name`` (usable as a decorator)."""
    _BRAINS[brain_cls.name] = brain_cls
    return brain_cls


def get_brain_class(backend: str) -> type[Brain]:
    """The brain class for ``backend``; ``UnknownBackendError`` names the known ones."""
    _load_builtins()
    try:
        return _BRAINS[backend]
    except KeyError:
        known = ", ".join(sorted(_BRAINS)) or "none"
        raise UnknownBackendError(
            f"Unknown backend {backend!r}. Known backends: {known}."
        ) from None


def available_backends() -> dict[str, type[Brain]]:
    _load_builtins()
    return dict(_BRAINS)


def _load_builtins() -> None:
    # Imported lazily so that importing the package does not import every backend.
    from app.brains import claude  # noqa: F401
