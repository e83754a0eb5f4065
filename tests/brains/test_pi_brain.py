"""The pi brain's own parts: the wrapper that loads the gate, and the gate's questions.

The gate itself is tested against the real pi in ``tests/real/test_real_pi.py``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
from acp.schema import ToolCallUpdate

from app.brains import get_brain_class
from app.brains.acp.agents.pi import GATE_FILE, GATE_MARKER, PiBrain, gate_question, write_gate
from app.brains.base import Capability
from tests.brains.conftest import EventRecorder
from tests.fakes.fake_acp_agent import FakeAcpFiles


def test_the_wrapper_runs_pi_with_the_gate_and_every_argument(tmp_path: Path) -> None:
    # A pi command whose path needs quoting, which prints what it was given.
    odd = tmp_path / "my pi's dir"
    odd.mkdir()
    fake_pi = odd / "pi"
    fake_pi.write_text('#!/bin/sh\nfor a in "$@"; do echo "[$a]"; done\n')
    fake_pi.chmod(0o755)
    folder = tmp_path / "gate"
    folder.mkdir()

    wrapper = write_gate(folder, str(fake_pi))
    out = subprocess.run(
        [wrapper, "--mode", "rpc", "two words"], capture_output=True, text=True, check=True
    ).stdout
    gate = folder / GATE_FILE
    assert out.splitlines() == ["[-e]", f"[{gate}]", "[--mode]", "[rpc]", "[two words]"]
    assert GATE_MARKER in gate.read_text()


def test_only_the_gates_own_questions_are_taken_for_it() -> None:
    real = {"marker": GATE_MARKER, "toolCallId": "call_1", "toolName": "bash", "input": {}}

    def asked(call_id: str, raw: object) -> ToolCallUpdate:
        return ToolCallUpdate(tool_call_id=call_id, raw_input=raw)

    ui = {"method": "confirm", "title": "bash: ls", "message": json.dumps(real)}
    assert gate_question(asked("pi-ui-1", ui)) == real
    # Another extension's confirm, a select, a non-JSON message, a question of the agent.
    assert gate_question(asked("pi-ui-2", {**ui, "message": "Allow rm -rf?"})) is None
    assert gate_question(asked("pi-ui-3", {**ui, "method": "select"})) is None
    other = json.dumps({**real, "marker": "someone-else"})
    assert gate_question(asked("pi-ui-4", {**ui, "message": other})) is None
    assert gate_question(asked("call_1", ui)) is None


def test_pi_is_registered_with_what_it_enforces() -> None:
    assert get_brain_class("pi") is PiBrain
    assert PiBrain.default_argv == ("pi-acp",)
    assert Capability.PERMISSION_PROMPTS in PiBrain.capabilities
    assert Capability.PER_SESSION_MCP in PiBrain.capabilities
    assert Capability.FORK not in PiBrain.capabilities


async def test_the_gate_lives_only_as_long_as_the_brain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    files = FakeAcpFiles(tmp_path)
    files.scenario(load_session=True)
    brain = PiBrain(files.config(env={"PI_ACP_PI_COMMAND": "/opt/my pi"}))
    recorder = EventRecorder(brain)
    try:
        await brain.start()
        (folder,) = temp.glob("angelia-pi-*")
        assert sorted(p.name for p in folder.iterdir()) == ["pi", GATE_FILE]
        # The profile's own pi command is what the wrapper runs.
        assert "exec '/opt/my pi' -e " in (folder / "pi").read_text()
    finally:
        await brain.stop()
        await recorder.cancel()
    assert list(temp.iterdir()) == []
