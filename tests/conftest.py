"""Shared fixtures: an isolated data dir, the app, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.db.datadir import FILE_MODE, make_private_dir
from app.db.engine import open_database
from app.main import create_app
from app.server import AngeliaServer
from app.settings import Settings

pytest_plugins = ["tests.conformance_plugin"]

FAKES = Path(__file__).parent / "fakes"
FAKE_CLAUDE = FAKES / "fake_claude.py"
TOKEN = "test-token-0123456789"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever touches the real user's data dir or a parent agent session."""
    monkeypatch.setenv("ANGELIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CLAUDECODE", raising=False)
    monkeypatch.delenv("ANGELIA_TOKEN", raising=False)
    # An import with no path reads Claude Code's folder: never the real user's.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database at the newest schema, made once per test process. Every test's data dir
    starts from a copy: migrating a fresh file costs ~0.1 s of CPU, and a thousand tests
    would spend it on the same result (tests/services/test_migrations.py migrates fresh and
    old files itself)."""
    engine = open_database(tmp_path_factory.mktemp("migrated") / "data")
    url = engine.url.database
    engine.dispose()  # closing the last connection folds the WAL back into the file
    assert url is not None
    return Path(url)


@pytest.fixture
def settings(tmp_path: Path, migrated_database: Path) -> Settings:
    data_dir = tmp_path / "data"
    make_private_dir(data_dir)
    shutil.copyfile(migrated_database, data_dir / "angelia.db")
    (data_dir / "angelia.db").chmod(FILE_MODE)
    return Settings(
        data_dir=data_dir,
        token=TOKEN,
        idle_check_interval_s=3600,
        close_timeout_s=2.0,
    )


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LiveServer:
    """A uvicorn server for one app, running in the test's event loop."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = AngeliaServer(app, "127.0.0.1", self.port)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve())
        for _ in range(500):
            if self._server.started:
                return
            await asyncio.sleep(0.01)
        raise RuntimeError("server did not start")

    async def stop(self) -> None:
        self._server.request_stop()
        if self._task is not None:
            await asyncio.wait_for(self._task, timeout=30)

    def client(self, **kw: Any) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30, **kw)


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[LiveServer]:
    srv = LiveServer(create_app(settings))
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with server.client() as c:
        yield c


def write_scenario(path: Path, turns: list[list[dict[str, Any]]], **extra: Any) -> Path:
    path.write_text(json.dumps({"turns": turns, **extra}))
    return path


@pytest.fixture
def fake_claude(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Profile fields that make the claude backend run the fake executable."""
    scenario = tmp_path / "scenario.json"
    log = tmp_path / "fake_claude_log.jsonl"
    write_scenario(scenario, [[{"text": "hello from fake"}]])
    yield {
        "command": [sys.executable, str(FAKE_CLAUDE)],
        "env": {"FAKE_CLAUDE_SCENARIO": str(scenario), "FAKE_CLAUDE_LOG": str(log)},
        "scenario": scenario,
        "log": log,
    }


@pytest.fixture
def tls_proxy(tmp_path: Path) -> Iterator[Any]:
    """Start HTTPS proxies standing in for ``tailscale serve`` (tests/fakes/tls_proxy.py):
    ``tls_proxy(upstream_port, user_login=None)`` returns a started ``TlsProxy``."""
    from tests.fakes.tls_proxy import TlsProxy

    started: list[TlsProxy] = []

    def start(upstream_port: int, user_login: str | None = None, host: str = "127.0.0.1") -> Any:
        folder = tmp_path / f"proxy-{len(started)}"
        folder.mkdir()
        proxy = TlsProxy(folder, host, upstream_port, user_login=user_login).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()
