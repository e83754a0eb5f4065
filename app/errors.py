"""The application's exception tree; messages say what happened and what to do."""

from __future__ import annotations


class AppError(Exception):
    """Base class; ``status`` is the HTTP status the web layer answers with."""

    status: int = 400

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFoundError(AppError):
    status = 404


class ConflictError(AppError):
    status = 409


class ValidationFailed(AppError):
    """Bad user input; ``field`` names the offending field."""

    status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class AgentCapReached(AppError):
    """Starting one more agent would run more at once than the server allows."""

    status = 422


class BrainError(AppError):
    status = 502


class UnknownBackendError(BrainError):
    status = 422


class AgentNotFoundError(BrainError):
    """The backend's executable is missing; ``message`` says how to install it."""


class BrainStartError(BrainError):
    """The backend started but failed before it could take a message."""


class ProtocolError(BrainError):
    """The backend broke its protocol in a way we cannot skip over."""
