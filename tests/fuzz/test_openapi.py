"""Schemathesis against the app's own OpenAPI spec: no operation answers with a 5xx.

The server is ``angelia serve`` in a child process (the generated requests are sent
synchronously). Two passes over every operation:

1. as generated: ids are random, so this mostly exercises validation and 404 paths;
2. with the path ids replaced by a real profile, session and rule, so bodies and queries
   reach the services.

Left out: the SSE stream (with a real id it never ends by design; with an unknown id it
currently breaks, see test_api_regressions.py), and in pass 2 the operations that start the
profile's command (``messages``, ``fork``, ``continue``): fuzzed PATCHes may have rewritten
that command by then. Both are covered by the API tests. Requests that hit a bug already
pinned by an xfail test in test_api_regressions.py are not sent (``known_bug``), so this run
reports only new failures.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.conftest import FAKE_CLAUDE, TOKEN
from tests.faults._support import ServerProcess

AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 20
SSE = {("GET", "/api/sessions/{session_id}/stream")}
STARTS_PROCESSES = ("/messages", "/fork", "/continue")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "data", tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


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


def known_bug(case: Any) -> bool:
    """Inputs that reproduce a failure already pinned in test_api_regressions.py."""
    path = case.operation.path
    query = case.query or {}
    body = case.body if isinstance(case.body, dict) else {}
    if path == "/api/search" and "\x00" in str(query.get("q", "")):
        return True
    return (
        case.operation.method.upper() == "PATCH"
        and path == "/api/profiles/{profile_id}"
        and any(k in body and body[k] is None for k in ("name", "cwd"))
    )


def run_operation(
    operation: Any, base: str, ids: dict[str, str] | None, failures: list[str]
) -> None:
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
        if known_bug(case):
            return
        try:
            response = case.call(base_url=base, headers=AUTH, timeout=10)
        except Exception as exc:  # a dropped connection is as bad as a 500
            failures.append(f"{operation.label}: {type(exc).__name__}: {exc}")
            return
        if response.status_code >= 500:
            failures.append(
                f"{operation.label} -> {response.status_code}: {response.text[:300]}\n"
                f"  {case.as_curl_command()}"
            )

    check()


def test_no_operation_answers_5xx(live: ServerProcess, project_dir: Path, tmp_path: Path) -> None:
    spec = httpx.get(f"{live.url}/openapi.json", headers=AUTH, timeout=10).json()
    schema = schemathesis.openapi.from_dict(spec)
    operations: list[Any] = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 20, [op.label for op in operations]
    failures: list[str] = []

    for op in operations:
        if (op.method.upper(), op.path) not in SSE:
            run_operation(op, live.url, None, failures)
    ids = real_ids(live.url, project_dir, tmp_path)
    for op in operations:
        if (op.method.upper(), op.path) in SSE or op.path.endswith(STARTS_PROCESSES):
            continue
        run_operation(op, live.url, ids, failures)

    assert not failures, "\n".join(dict.fromkeys(failures))
    assert "Traceback" not in live.log(), live.log()[-3000:]
