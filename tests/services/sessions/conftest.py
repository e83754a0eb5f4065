"""An event log on the store tests' database, for the session services that read it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from app.services.store.eventlog import EventLog
from tests.services.store.test_eventwriter import engine

__all__ = ["engine"]


@pytest.fixture
def events(engine: Engine) -> Iterator[EventLog]:  # noqa: F811
    log = EventLog(engine)
    yield log
    log.writer.close(5)
