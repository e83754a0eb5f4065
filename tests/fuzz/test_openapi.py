"""Schemathesis against the app's own OpenAPI spec, and the pages: nothing answers a 5xx.

The server is ``angelia serve`` in a child process (the generated requests are sent
synchronously). The API's spec comes from the server; the pages are left out of it, so
a second spec is made here from the page routers' GET routes (and the one POST that
takes an id in its path), so their query and path parameters are fuzzed the same way.
Two passes over every operation (each a test of its own, for the API and for the pages):

1. as generated: ids are random, so this mostly exercises validation and 404 paths;
2. with the path ids replaced by a real profile, session and rule, so bodies and queries
   reach the services.

The SSE streams are read only up to their status line, then dropped: with a real id they
never end by design. Left out of pass 2 are the operations that start the profile's
command (``messages``, ``fork``, ``continue``): fuzzed PATCHes may have rewritten that
command by then; the API tests cover them. ``Last-Event-ID`` has a sweep of its own
against both streams, with the rule it must keep.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, APIRouter
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import app.web
from tests.conftest import FAKE_CLAUDE, TOKEN
from tests.faults._support import ServerProcess

AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 20
SSE = {("GET", "/api/sessions/{session_id}/stream"), ("GET", "/sessions/{session_id}/live")}
STARTS_PROCESSES = ("/messages", "/fork", "/continue")


def page_modules() -> list[str]:
    """Every module of ``app.web`` with a router outside ``/api`` (the pages and /docs),
    found by walking them so that a new page is swept too."""
    found = []
    for m in pkgutil.walk_packages(app.web.__path__, "app.web."):
        router = getattr(importlib.import_module(m.name), "router", None)
        if isinstance(router, APIRouter) and router.prefix != "/api":
            found.append(m.name)
    return sorted(found)


PAGE_MODULES = page_modules()
# Page POSTs change things or start agents; this one only imports from the (empty, here)
# Claude Code folder, and its path takes an id that must never reach a glob unchecked.
PAGE_POSTS = {"/sessions/import/claude/{backend_session_id}"}
# The largest seq the streams accept (app/web/deps.py: MAX_SEQ).
MAX_SEQ = 2**53 - 1


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "data", tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


def page_spec() -> dict[str, Any]:
    """An OpenAPI document of the pages, which the app keeps out of its own."""
    routes = []
    for name in PAGE_MODULES:
        for route in importlib.import_module(name).router.routes:
            if isinstance(route, APIRoute) and ("GET" in route.methods or route.path in PAGE_POSTS):
                shown = copy.copy(route)
                shown.include_in_schema = True
                routes.append(shown)
    return get_openapi(title="pages", version="0", routes=routes)


def real_ids(base: str, project_dir: Path, tmp_path: Path) -> dict[str, str]:
    with httpx.Client(base_url=base, headers=AUTH, timeout=10) as c:
        body = {
            "name": "fuzz",
            "backend": "claude",
            "cwd": str(project_dir),
            "command": [sys.executable, str(FAKE_CLAUDE)],
            "env": {"FAKE_CLAUDE_LOG": str(tmp_path / "fake.log")},
        }
        profile = c.post("/api/profiles", json=body)
        assert profile.status_code == 201, profile.text
        profile_id = profile.json()["id"]
        session = c.post("/api/sessions", json={"profile_id": profile_id})
        assert session.status_code == 201, session.text
        rule = c.post(
            f"/api/profiles/{profile_id}/rules", json={"rule": "Bash(ls:*)", "decision": "allow"}
        )
        assert rule.status_code == 201, rule.text
        return {
            "profile_id": profile_id,
            "session_id": session.json()["id"],
            "rule_id": rule.json()["id"],
        }


def send(case: Any, base: str) -> tuple[int, str]:
    """The status and the start of the answer; a stream is dropped once its status is in."""
    if (case.operation.method.upper(), case.operation.path) not in SSE:
        response = case.call(base_url=base, headers=AUTH, timeout=10)
        return response.status_code, response.text[:300]
    return send_kwargs(case.as_transport_kwargs(base_url=base, headers=AUTH))


def send_kwargs(kwargs: dict[str, Any], *, probe: bool = False) -> tuple[int, str]:
    """``probe``: a stream that answered 200 is read briefly too, since a stream that
    fails after its status line drops the connection instead of answering 500."""
    timeout = (10, 0.5) if probe else 10
    with requests.request(**kwargs, stream=True, timeout=timeout) as answer:
        if answer.status_code != 200 or "text/event-stream" not in answer.headers["content-type"]:
            return answer.status_code, answer.text[:300]
        if probe:
            try:
                next(answer.iter_content(1), b"")
            except requests.exceptions.ChunkedEncodingError as exc:
                return 599, f"the stream broke off: {exc}"
            except requests.exceptions.ConnectionError:
                pass  # a read timeout (requests names it so): the stream is alive and waits
        return 200, ""


# Values at the edges the generator seldom reaches: integers past SQLite's, dates at the
# calendar's ends (and past them once a zone is applied), glob characters, a magic
# /proc link, NUL and length. Each is sent once per parameter, on the first example; a
# value with a NUL must be refused (4xx), whatever the field, since none can carry one.
INT_EDGES = (2**63, -(2**63) - 1, 10**30)
STRING_EDGES = (
    "0001-01-01",
    "9999-12-31",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "**",
    "/proc/1/root",
    "a\x00b",
    "\x00",
    "a" * 5000,
)
PATH_EDGES = ("**", "*", "[a]")


def types_of(schema: dict[str, Any]) -> set[str]:
    found = {schema["type"]} if "type" in schema else set()
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        found |= types_of(option)
    return found


def edge_requests(case: Any, base: str, spec: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Request arguments for ``case`` with one parameter at a time set to an edge value."""
    operation = spec["paths"][case.operation.path][case.operation.method.lower()]
    for param in operation.get("parameters", []):
        where, name, kinds = param["in"], param["name"], types_of(param.get("schema", {}))
        if where == "query":
            edges: tuple[Any, ...] = INT_EDGES if "integer" in kinds else STRING_EDGES
            for value in edges if kinds & {"integer", "string"} else ():
                kwargs = case.as_transport_kwargs(base_url=base, headers=AUTH)
                kwargs["params"] = {**(kwargs.get("params") or {}), name: value}
                yield f"{name}={str(value)[:40]!r}", kwargs
        elif where == "path" and "string" in kinds:
            kept = dict(case.path_parameters)
            for value in PATH_EDGES:
                case.path_parameters[name] = value
                yield f"{name}={value!r}", case.as_transport_kwargs(base_url=base, headers=AUTH)
            case.path_parameters.update(kept)
    body = case.body if isinstance(case.body, dict) else {}
    for name, kinds in body_fields(operation, spec):
        edges = INT_EDGES if "integer" in kinds else STRING_EDGES if "string" in kinds else ()
        for value in edges:
            kwargs = case.as_transport_kwargs(base_url=base, headers=AUTH)
            kwargs.pop("data", None)
            kwargs["json"] = {**body, name: value}
            yield f"body.{name}={str(value)[:40]!r}", kwargs


def body_fields(operation: dict[str, Any], spec: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """The top-level fields of the operation's JSON body, with their types."""
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    for option in [schema, *schema.get("anyOf", [])]:
        if "$ref" in option:
            schema = spec["components"]["schemas"][option["$ref"].rsplit("/", 1)[-1]]
            break
    return [(name, types_of(prop)) for name, prop in schema.get("properties", {}).items()]


def run_operation(
    operation: Any,
    base: str,
    ids: dict[str, str] | None,
    failures: list[str],
    spec: dict[str, Any],
) -> None:
    edged = False

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), data=st.data())
    def check(case: Any, data: Any) -> None:
        if ids:
            for name in list(case.path_parameters or {}):
                if name in ids:
                    case.path_parameters[name] = ids[name]
        try:
            status, text = send(case, base)
        except Exception as exc:  # a dropped connection is as bad as a 500
            failures.append(f"{operation.label}: {type(exc).__name__}: {exc}")
            return
        if status >= 500:
            failures.append(
                f"{operation.label} -> {status}: {text}\n  {case.as_curl_command(base_url=base)}"
            )
        nonlocal edged
        if edged:
            return
        edged = True
        for label, kwargs in edge_requests(case, base, spec):
            try:
                status, text = send_kwargs(kwargs, probe=True)
            except Exception as exc:
                failures.append(f"{operation.label} {label}: {type(exc).__name__}: {exc}")
                continue
            if status >= 500:
                failures.append(f"{operation.label} {label} -> {status}: {text}")
            elif "\\x00" in label and status < 400:
                failures.append(f"{operation.label} {label} -> {status}: a NUL was taken")

    check()


def server_errors(log: str) -> list[str]:
    """The tracebacks in the server's log, less FastAPI's own when an SSE client leaves
    while its keepalive task is sending (fastapi discussion 15725: logged, harmless)."""
    # An entry is a line that starts at the margin and the indented lines under it.
    entries = re.split(r"\n(?=\S)", log)
    return [
        entry
        for entry in entries
        if "Traceback" in entry
        and not ("_keepalive_inserter" in entry and "BrokenResourceError" in entry)
    ]


def operations_of(spec: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    schema = schemathesis.openapi.from_dict(spec)
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    return [(op, spec) for op in operations]


# Four parts, each with a server of its own, so a run spread over worker processes
# finishes them side by side: the API and the pages, each with random and with real ids.
@pytest.mark.parametrize("ids_kind", ["random-ids", "real-ids"])
@pytest.mark.parametrize("part", ["api", "pages"])
def test_no_operation_answers_5xx(
    live: ServerProcess, project_dir: Path, tmp_path: Path, part: str, ids_kind: str
) -> None:
    if part == "api":
        spec = httpx.get(f"{live.url}/openapi.json", headers=AUTH, timeout=10).json()
        operations = operations_of(spec)
        assert len(operations) >= 20, [op.label for op, _ in operations]
        assert any((op.method.upper(), op.path) in SSE for op, _ in operations)
    else:
        operations = operations_of(page_spec())
        assert len(operations) >= 15, [op.label for op, _ in operations]
    failures: list[str] = []

    if ids_kind == "random-ids":
        for op, source in operations:
            run_operation(op, live.url, None, failures, source)
    else:
        ids = real_ids(live.url, project_dir, tmp_path)
        # Deletes last, so the other operations reach a session and profile that exist.
        for op, source in sorted(operations, key=lambda item: item[0].method.upper() == "DELETE"):
            if op.method.upper() == "POST" and op.path.endswith(STARTS_PROCESSES):
                continue
            run_operation(op, live.url, ids, failures, source)

    assert not failures, "\n".join(dict.fromkeys(failures))
    assert not server_errors(live.log()), server_errors(live.log())[:3]


# What a header can carry: Latin-1 without control characters, as h11 sends it.
HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=24,
).map(lambda s: s.strip(" \t"))
LAST_EVENT_IDS = st.one_of(
    st.integers(min_value=0, max_value=2**70).map(str),
    st.integers(min_value=MAX_SEQ - 3, max_value=MAX_SEQ + 3).map(str),
    HEADER_TEXT,
    st.sampled_from(["²", "0²", "¹", "-1", "+1", "0x1", "1e3", "1 2", "0" * 5000 + "1"]),
)


def expected_status(value: str) -> int:
    """The rule both streams keep: blank is no header; ASCII digits up to MAX_SEQ resume."""
    if not value:
        return 200
    if value.isascii() and value.isdigit() and int(value.lstrip("0") or "0") <= MAX_SEQ:
        return 200
    return 400


def test_last_event_id_follows_its_rule_on_both_streams(
    live: ServerProcess, project_dir: Path, tmp_path: Path
) -> None:
    sid = real_ids(live.url, project_dir, tmp_path)["session_id"]
    urls = [f"/api/sessions/{sid}/stream", f"/sessions/{sid}/live"]
    seen: list[str] = []

    @settings(
        max_examples=60,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=LAST_EVENT_IDS)
    def check(value: str) -> None:
        headers = {**AUTH, "Last-Event-ID": value.encode("latin-1")}
        with httpx.Client(base_url=live.url, timeout=10) as c:
            for url in urls:
                with c.stream("GET", url, headers=headers) as r:
                    assert r.status_code == expected_status(value), (url, value)
                    if r.status_code == 400:
                        assert "Last-Event-ID" in r.read().decode()
        seen.append(value)

    check()
    assert any(expected_status(v) == 400 for v in seen) and any(
        expected_status(v) == 200 for v in seen
    )
    assert not server_errors(live.log()), server_errors(live.log())[:3]
