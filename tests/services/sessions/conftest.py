"""An event log on the service tests' database, for the session services that read it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from app.services.store.eventlog import EventLog


@pytest.fixture
def events(engine: Engine) -> Iterator[EventLog]:
    log = EventLog(engine)
    yield log
    log.writer.close(5)
