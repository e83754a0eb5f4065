"""Helpers shared by the security, fault and fuzz tests."""

from __future__ import annotations

import asyncio
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute, Mount, WebSocketRoute

from tests.api.test_chat import make_session as make_session

REPO = Path(__file__).resolve().parents[2]
# The service worker and the manifest: nothing secret, and the manifest is fetched cookieless.
PUBLIC_PATHS = frozenset({"/api/health", "/sw.js", "/manifest.webmanifest"})
PUBLIC_PREFIX = "/static"
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


@dataclass(frozen=True)
class Endpoint:
    """One (method, path) the app serves; ``kind`` is http, mount or websocket."""

    method: str
    path: str
    kind: str = "http"

    @property
    def public(self) -> bool:
        return self.path in PUBLIC_PATHS or (
            self.path == PUBLIC_PREFIX or self.path.startswith(PUBLIC_PREFIX + "/")
        )

    @property
    def state_changing(self) -> bool:
        return self.method not in ("GET", "HEAD", "OPTIONS")

    def url(self, ids: dict[str, str] | None = None) -> str:
        ids = ids or {}
        return _PARAM.sub(lambda m: ids.get(m.group(1), "no-such-id"), self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def _contexts(app: FastAPI) -> Iterator[tuple[BaseRoute, str | None, set[str] | None]]:
    """(original route, full path format, methods) for every route, nested routers too."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: included routes are flattened into app.routes
        for route in app.routes:
            yield route, getattr(route, "path_format", None), getattr(route, "methods", None)
        return
    for ctx in iter_route_contexts(app.routes):
        yield ctx.original_route, ctx.path_format or ctx.path, ctx.methods


def app_endpoints(app: FastAPI) -> list[Endpoint]:
    """Every endpoint of the app, read from its route table (so new routes are included)."""
    out: list[Endpoint] = []
    for route, path, methods in _contexts(app):
        if path is None:
            continue
        if isinstance(route, WebSocketRoute) or type(route).__name__ == "APIWebSocketRoute":
            out.append(Endpoint("GET", path, "websocket"))
        elif isinstance(route, Mount) or methods is None:
            # A mount: probe one path below it.
            prefix = path.split("{", 1)[0].rstrip("/")
            out.append(Endpoint("GET", prefix + "/probe.txt", "mount"))
        else:
            out.extend(Endpoint(m, path) for m in sorted(methods) if m != "HEAD")
    return sorted(set(out), key=lambda e: (e.path, e.method))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def processes_mentioning(marker: str) -> list[int]:
    """Pids of live processes whose command line or environment contains ``marker``."""
    needle = marker.encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in seen and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def ws_handshake(app: Any, path: str, headers: dict[str, str]) -> str:
    """Drive one websocket handshake through ``app``; returns the first message type sent."""
    scope = {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "scheme": "ws",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
        "subprotocols": [],
        "state": {},
    }
    incoming = [{"type": "websocket.connect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), timeout=10)
    assert sent, "the app sent nothing"
    kind: str = sent[0]["type"]
    return kind
