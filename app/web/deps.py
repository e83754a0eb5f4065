"""Shared state of the running app and the FastAPI dependencies that hand it out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates
from sqlalchemy.engine import Engine

from app.services.backends import BackendDetector
from app.services.eventlog import EventLog
from app.services.follow import Follower
from app.services.lifecycle import Stopper
from app.services.manager import SessionManager
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


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.angelia
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def existing_session(session_id: str, request: Request) -> str:
    """404 before a streaming response starts, not a broken stream after it."""
    from app.services import store

    store.get_session(get_state(request).engine, session_id)
    return session_id


SessionIdDep = Annotated[str, Depends(existing_session)]
