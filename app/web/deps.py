"""Shared state of the running app and the FastAPI dependencies that hand it out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.templating import Jinja2Templates
from sqlalchemy.engine import Engine

from app.errors import AppError, ValidationFailed
from app.nul import REFUSAL, nul_pair
from app.services.profiles.backends import BackendDetector
from app.services.sessions.lifecycle import Stopper
from app.services.sessions.manager import SessionManager
from app.services.store.eventlog import EventLog
from app.services.transcripts.follow import Follower
from app.settings import Settings


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    events: EventLog
    manager: SessionManager
    templates: Jinja2Templates
    token: str
    backends: BackendDetector
    stopper: Stopper
    follower: Follower


def state_of(request: Request) -> AppState:
    state: AppState = request.app.state.angelia
    return state


# Dependencies that do no I/O are coroutines: FastAPI runs a plain function dependency in
# its thread pool, and the hop there and back cost every request ~0.5 ms (health: 0.7 ->
# 1.2 ms at the median) and, under load, a wait for the interpreter lock on each side.
async def get_state(request: Request) -> AppState:
    return state_of(request)


StateDep = Annotated[AppState, Depends(get_state)]


def existing_session(session_id: str, request: Request) -> str:
    """404 before a streaming response starts, not a broken stream after it."""
    from app.services.store import store

    store.get_session(state_of(request).engine, session_id)
    return session_id


SessionIdDep = Annotated[str, Depends(existing_session)]


# -- bounded input ---------------------------------------------------------------------
# Sequence numbers go to the browser, which reads them as JavaScript numbers; beyond the
# largest exact one no real seq exists, and SQLite's own integers end not much later.
MAX_SEQ = 2**53 - 1

# ``Last-Event-ID`` is what an EventSource echoes back from the ids the streams send:
# ASCII digits, nothing else. Blank counts as absent (the spec's "no last event").
_DIGITS = frozenset("0123456789")


async def last_event_id(
    value: Annotated[str | None, Header(alias="last-event-id")] = None,
) -> int | None:
    """The seq a reconnecting stream resumes after; None without the header.

    Raises:
        AppError: (400) anything but ASCII digits, or a number beyond ``MAX_SEQ``.
    """
    text = (value or "").strip(" \t")
    if not text:
        return None
    # Zeros in front are dropped and the length checked before int(), which refuses a
    # few thousand digits with an error of its own.
    significant = text.lstrip("0") or "0"
    if not set(text) <= _DIGITS or len(significant) > len(str(MAX_SEQ)):
        raise _bad_last_event_id()
    seq = int(significant)
    if seq > MAX_SEQ:
        raise _bad_last_event_id()
    return seq


def _bad_last_event_id() -> AppError:
    return AppError(
        f"Last-Event-ID must be a whole number from 0 to {MAX_SEQ}, the id of an event "
        "this stream sent"
    )


LastEventIdDep = Annotated[int | None, Depends(last_event_id)]


def aware_utc(value: datetime | None, field: str) -> datetime | None:
    """A query's moment in UTC; one without a zone is read as UTC.

    Raises:
        ValidationFailed: the moment leaves the calendar once moved to UTC.
    """
    if value is None:
        return None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as exc:
        raise ValidationFailed(field, "is out of range once converted to UTC") from exc


async def refuse_nul(request: Request) -> None:
    """Every route's query, path and form values, checked for a NUL like the JSON bodies
    are (``app.nul``): a NUL cannot reach a command line, a path or git.

    Raises:
        ValidationFailed: (422) a name or value holds a NUL; nothing has run yet.
    """
    found = nul_pair(request.query_params.multi_items()) or nul_pair(request.path_params.items())
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if found is None and media in ("application/x-www-form-urlencoded", "multipart/form-data"):
        # Starlette keeps the parsed form on the request, so the route reads the same one.
        found = nul_pair((await request.form()).multi_items())
    if found is not None:
        raise ValidationFailed(found, REFUSAL)
