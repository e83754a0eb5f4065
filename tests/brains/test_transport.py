"""AgentProcess against real child processes: groups, stderr, closing, missing binaries."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import AgentNotFoundError, BrainStartError
from app.transport import AgentProcess, ProcessNotRunningError, build_env

# Prints the pid of a grandchild in the same process group, then idles.
SPAWNS_GRANDCHILD = """
import json, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(json.dumps({"grandchild": child.pid}), flush=True)
time.sleep(60)
"""

# The same, but the agent itself exits on stdin EOF and leaves the grandchild running.
SPAWNS_GRANDCHILD_EXITS_ON_EOF = """
import json, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(json.dumps({"grandchild": child.pid}), flush=True)
sys.stdin.read()
"""

# The grandchild leaves the group (its own session) but keeps stdout; the agent exits.
SPAWNS_ESCAPEE = """
import json, subprocess, sys
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
)
print(json.dumps({"escapee": child.pid}), flush=True)
"""

# Echoes each stdin line back as {"echo": <object>}; exits 0 on EOF.
ECHO = """
import json, sys
for line in sys.stdin:
    print(json.dumps({"echo": json.loads(line)}), flush=True)
"""

SCRIPT_IGNORES_EOF = "import time\nwhile True: time.sleep(0.05)\n"
SCRIPT_IGNORES_EOF_AND_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('{\"ready\": true}', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def _spawn(code: str, tmp_path: Path, **kw: Any) -> AgentProcess:
    process = AgentProcess(name="Test agent", **kw)
    await process.start([sys.executable, "-c", code], cwd=str(tmp_path), env=dict(os.environ))
    return process


async def _first(process: AgentProcess, timeout: float = 10.0) -> dict[str, Any]:
    messages = process.messages()
    return await asyncio.wait_for(anext(messages), timeout)


async def _collect(messages: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m async for m in messages]


needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


@needs_proc
async def test_kill_takes_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    process = await _spawn(SPAWNS_GRANDCHILD, tmp_path)
    grandchild = (await _first(process))["grandchild"]
    assert process.pid is not None and os.getpgid(process.pid) == process.pid
    assert os.getpgid(grandchild) == process.pid and _alive(grandchild)

    process.kill()
    assert await asyncio.wait_for(process.wait(), 5) == -signal.SIGKILL
    assert await _gone(grandchild)


@needs_proc
async def test_close_reaps_what_the_agent_left_behind(tmp_path: Path) -> None:
    # The agent exits on EOF, but its child (an MCP server, a background shell) would not.
    process = await _spawn(SPAWNS_GRANDCHILD_EXITS_ON_EOF, tmp_path)
    grandchild = (await _first(process))["grandchild"]
    started = time.monotonic()
    # Not held up by the grandchild's copies of stdout/stderr.
    assert await process.close(timeout=5) == 0
    assert time.monotonic() - started < 2
    assert await _gone(grandchild)


@needs_proc
async def test_messages_end_when_the_agent_dies_but_its_child_holds_stdout(
    tmp_path: Path,
) -> None:
    process = await _spawn(SPAWNS_GRANDCHILD, tmp_path)
    messages = process.messages()
    grandchild = (await asyncio.wait_for(anext(messages), 10))["grandchild"]
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)  # only the agent, not its group
    rest = await asyncio.wait_for(_collect(messages), 5)
    assert rest == []
    assert await asyncio.wait_for(process.wait(), 5) == -signal.SIGKILL
    assert await _gone(grandchild)


@needs_proc
async def test_messages_end_even_if_an_escaped_process_holds_stdout(tmp_path: Path) -> None:
    process = await _spawn(SPAWNS_ESCAPEE, tmp_path)
    messages = process.messages()
    escapee = (await asyncio.wait_for(anext(messages), 10))["escapee"]
    try:
        assert await asyncio.wait_for(_collect(messages), 5) == []
        assert await asyncio.wait_for(process.wait(), 5) == 0
        assert _alive(escapee)  # not ours to kill: it is in another group
    finally:
        os.kill(escapee, signal.SIGKILL)


async def test_stderr_flood_does_not_block_and_its_tail_is_kept(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for i in range(300): sys.stderr.write(f'{i:04d}' + 'e' * 1019 + '\\n')\n"
        "sys.stderr.write('STDERR-END\\n'); sys.stderr.flush()\n"
        "print('{\"done\": true}', flush=True)\n"
    )
    process = await _spawn(code, tmp_path)
    assert await _first(process) == {"done": True}
    assert await asyncio.wait_for(process.wait(), 10) == 0
    tail = process.stderr_tail()
    assert len(tail) == 64 * 1024
    assert tail.endswith("STDERR-END\n") and "0299e" in tail and "0000e" not in tail


async def test_stdout_framing_through_a_real_pipe(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "out = sys.stdout.buffer\n"
        "out.write(b'[SandboxDebug] noise\\n\\n{broken\\n')\n"
        "out.write(json.dumps({'big': 'x' * (10 * 1024 * 1024)}).encode() + b'\\n')\n"
        'out.write(b\'{"bad_utf8": "\\xff"}\\n\')\n'
        "out.write(b'{\"last\": true}')\n"
    )
    process = await _spawn(code, tmp_path)
    messages = [m async for m in process.messages()]
    assert len(messages) == 3
    assert len(messages[0]["big"]) == 10 * 1024 * 1024
    assert messages[1] == {"bad_utf8": "\ufffd"} and messages[2] == {"last": True}
    assert await process.wait() == 0


async def test_write_json_round_trip_and_writes_after_exit_fail(tmp_path: Path) -> None:
    process = await _spawn(ECHO, tmp_path)
    await process.write_json({"type": "user", "text": "h\u00e9llo \U0001f600"})
    assert await _first(process) == {"echo": {"type": "user", "text": "h\u00e9llo \U0001f600"}}
    assert await process.close() == 0
    with pytest.raises(ProcessNotRunningError):
        await process.write_line("{}")


async def test_close_is_quick_when_the_agent_exits_on_eof(tmp_path: Path) -> None:
    process = await _spawn(ECHO, tmp_path)
    started = time.monotonic()
    results = await asyncio.gather(process.close(timeout=5), process.close(timeout=5))
    assert results == [0, 0]
    assert time.monotonic() - started < 2
    assert await process.close() == 0  # idempotent


async def test_close_escalates_to_sigterm(tmp_path: Path) -> None:
    process = await _spawn(SCRIPT_IGNORES_EOF, tmp_path)
    started = time.monotonic()
    assert await process.close(timeout=0.3) == -signal.SIGTERM
    assert 0.3 <= time.monotonic() - started < 3


async def test_close_escalates_to_sigkill(tmp_path: Path) -> None:
    process = await _spawn(SCRIPT_IGNORES_EOF_AND_TERM, tmp_path)
    await _first(process)  # the SIGTERM handler is installed
    started = time.monotonic()
    assert await process.close(timeout=0.3) == -signal.SIGKILL
    assert 0.6 <= time.monotonic() - started < 3


async def test_missing_executable_says_what_to_install(tmp_path: Path) -> None:
    process = AgentProcess(name="Fancy CLI", install_hint="npm i -g fancy-cli")
    with pytest.raises(AgentNotFoundError) as info:
        await process.start(["fancy-cli-not-installed"], cwd=str(tmp_path), env=dict(os.environ))
    assert "npm i -g fancy-cli" in info.value.message
    assert "fancy-cli-not-installed" in info.value.message
    assert process.pid is None and await process.close() is None


async def test_missing_working_directory_is_not_reported_as_missing_binary(
    tmp_path: Path,
) -> None:
    process = AgentProcess(name="Fancy CLI", install_hint="npm i -g fancy-cli")
    with pytest.raises(BrainStartError) as info:
        await process.start([sys.executable], cwd=str(tmp_path / "nope"), env=dict(os.environ))
    assert not isinstance(info.value, AgentNotFoundError)
    assert "does not exist" in info.value.message


@needs_proc
async def test_child_dies_when_the_app_is_killed(tmp_path: Path) -> None:
    app = textwrap.dedent(
        f"""
        import asyncio, os, sys
        from app.transport import AgentProcess

        async def main():
            p = AgentProcess()
            await p.start([sys.executable, "-c", "import time; time.sleep(60)"],
                          cwd={str(tmp_path)!r}, env=dict(os.environ))
            print(p.pid, flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", app, stdout=asyncio.subprocess.PIPE
    )
    assert parent.stdout is not None
    child = int(await asyncio.wait_for(parent.stdout.readline(), 10))
    assert _alive(child)
    parent.kill()  # no cleanup code runs in the parent
    await parent.wait()
    assert await _gone(child)


def test_build_env_drops_claudecode_and_applies_overrides() -> None:
    base = {"PATH": "/bin", "CLAUDECODE": "1", "KEEP": "a", "OVERRIDDEN": "old"}
    env = build_env(base, {"OVERRIDDEN": "new", "ADDED": "x"})
    assert env == {"PATH": "/bin", "KEEP": "a", "OVERRIDDEN": "new", "ADDED": "x"}
    assert "CLAUDECODE" in base  # the caller's mapping is left alone
