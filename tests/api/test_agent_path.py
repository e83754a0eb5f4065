"""Checking a path typed for an agent installed off PATH (``POST /api/backends/check``).

The path comes from a browser, so it is hostile input: each way it can be wrong gets a
422 that says which, a program is only ever run directly (never by a shell), with a
small environment, for a bounded time and a bounded amount of output.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest

SCRIPT_OK = 'echo "2.1.332 (Claude Code, fake)"'


def program(folder: Path, name: str, body: str, mode: int = 0o755) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(mode)
    return path


async def refusal(client: httpx.AsyncClient, path: str) -> str:
    # Encoded here, with escapes: httpx would refuse a lone surrogate, which JSON allows.
    body = json.dumps({"path": path})
    headers = {"content-type": "application/json"}
    r = await client.post("/api/backends/check", content=body, headers=headers)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    return detail if isinstance(detail, str) else " ".join(d["message"] for d in detail)


async def test_a_working_agent_answers_with_its_version(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's own variables (its token, API keys) are not passed to a typed program.
    monkeypatch.setenv("SECRET_PROBE", "leaked")
    agent = program(tmp_path, "claude", 'echo "2.1.332 ${SECRET_PROBE:-clean}"')
    r = await client.post("/api/backends/check", json={"path": str(agent)})
    assert r.status_code == 200, r.text
    assert r.json() == {"path": str(agent), "version": "2.1.332 clean"}


async def test_a_path_is_never_read_by_a_shell(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    odd = program(tmp_path, "agent $(touch pwned); touch pwned", SCRIPT_OK)
    r = await client.post("/api/backends/check", json={"path": str(odd)})
    assert r.status_code == 200 and r.json()["version"].startswith("2.1.332"), r.text
    missing = f"{tmp_path}/nothing `touch pwned`"
    assert (await refusal(client, missing)).startswith("Not found:")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("", "Type the full path"),
        ("claude", "Give the full path, starting with /"),
        ("bin/claude", "is relative"),
        ("~/bin/claude", "starting with ~ is not expanded"),
        ("/usr/bin/\x00claude", "NUL"),
        ("/" + "a" * 5000, "longer than 4096"),
        ("/usr/bin/\ud800", "not valid text"),
    ],
)
async def test_a_path_that_is_not_absolute_or_plain_is_refused(
    client: httpx.AsyncClient, typed: str, expected: str
) -> None:
    assert expected in await refusal(client, typed)


async def test_missing_folder_and_unexecutable_files_are_refused(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    assert (await refusal(client, str(tmp_path / "nope"))).startswith(
        f"Not found: there is no file at {tmp_path / 'nope'}"
    )
    said = await refusal(client, str(tmp_path))
    assert said.startswith("Not executable:") and "is a folder" in said
    plain = program(tmp_path, "plain", SCRIPT_OK, mode=0o644)
    said = await refusal(client, str(plain))
    assert said.startswith("Not executable:") and "no execute permission" in said
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in await refusal(client, str(fifo))
    # Executable bits on something the system cannot start (no #! line, not a binary).
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF-not-really")
    junk.chmod(0o755)
    said = await refusal(client, str(junk))
    assert said.startswith("Not executable: the system would not start"), said


async def test_a_program_that_hangs_is_stopped_and_refused(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    hangs = program(tmp_path, "hangs", f"echo $$ > {pid_file}; exec sleep 60")
    started = time.monotonic()
    said = await refusal(client, str(hangs))
    assert time.monotonic() - started < 10
    assert said.startswith("Did not answer:") and "within 3 s" in said
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_program_that_floods_is_cut_off(client: httpx.AsyncClient, tmp_path: Path) -> None:
    floods = program(tmp_path, "floods", "yes 1.0")
    started = time.monotonic()
    said = await refusal(client, str(floods))
    assert time.monotonic() - started < 5
    assert said.startswith("Printed no version:") and "more than" in said


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("exit 0", "printed nothing"),
        ("echo usage: agent [options]", 'printed "usage: agent [options]", which has no version'),
        ('echo "1.0"; exit 3', "exited with status 3"),
    ],
)
async def test_a_program_without_a_version_is_refused(
    client: httpx.AsyncClient, tmp_path: Path, body: str, expected: str
) -> None:
    said = await refusal(client, str(program(tmp_path, "agent", body)))
    assert said.startswith("Printed no version:") and expected in said, said
