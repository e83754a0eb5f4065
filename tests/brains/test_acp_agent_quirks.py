"""The ACP brain against behaviour real agents showed that the plain fake agent does not.

Seen with gemini-cli 0.61 (``tests/real/test_real_acp_agents.py``):

* ``session/load`` answers first and streams the replay afterwards; the replay must still
  not be shown as if the agent were saying it now.
* A rejected permission question gets no final ``tool_call_update``: the call would stay
  open for ever, so the brain fails it when the turn ends.
* Start-up errors carry their cause in the JSON-RPC error's ``data``.

The agent here is the fake ACP agent with those habits (``QuirkyAgent``), started as
``python -c <AGENT_MAIN>``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import LoadSessionResponse, PermissionOption, ToolCallUpdate

from app.brains import get_brain_class
from app.brains.acp.brain import AcpBrain
from app.brains.acp.session import AcpSession
from app.brains.acp.updates import UpdateMapper
from app.brains.base import PermissionAnswer
from app.brains.events import (
    AssistantText,
    BrainEvent,
    PermissionAsked,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnEnded,
)
from tests.brains.conftest import EventRecorder
from tests.fakes.fake_acp_agent import DEFAULT_OPTIONS, FakeAcpFiles, FakeAgent

REPO = Path(__file__).resolve().parents[2]
AGENT_MAIN = f"""
import asyncio, sys
sys.path.insert(0, {str(REPO)!r})
from tests.brains.test_acp_agent_quirks import QuirkyAgent
from tests.fakes import fake_acp_agent
fake_acp_agent.FakeAgent = QuirkyAgent
asyncio.run(fake_acp_agent.main(sys.argv[1:]))
"""
StartAcp = Callable[..., Awaitable[tuple[AcpBrain, EventRecorder]]]


class QuirkyAgent(FakeAgent):
    """The fake agent, plus two scenario keys.

    ``late_history``: ``session/load`` answers at once and replays ``history`` afterwards,
    one update every 20 ms. ``gemini_tools``: a ``{"tool": …, "permission": true}`` step
    introduces the call only through the question, and a rejected call gets no update.
    """

    async def load_session(self, cwd: str, session_id: str, **kw: Any) -> LoadSessionResponse:
        if not self.s.get("late_history"):
            return await super().load_session(cwd=cwd, session_id=session_id, **kw)

        async def replay() -> None:
            for short in self.s.get("history", []):
                await asyncio.sleep(0.02)
                await self.send(session_id, short)

        self.replay = asyncio.get_running_loop().create_task(replay())
        return LoadSessionResponse(
            modes=self.mode_state(), config_options=self.config_options() or None
        )

    async def tool(self, session_id: str, step: dict[str, Any]) -> str | None:
        if not self.s.get("gemini_tools"):
            return await super().tool(session_id, step)
        spec = step["tool"]
        response = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate.model_validate(
                {"toolCallId": spec["id"], "title": spec["title"], "status": "pending"}
            ),
            options=[
                PermissionOption.model_validate({"optionId": i, "name": n, "kind": k})
                for i, n, k in DEFAULT_OPTIONS
            ],
        )
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None)
        if any(i == chosen and k.startswith("allow") for i, _, k in DEFAULT_OPTIONS):
            await self.send(session_id, {"tool_update": {"id": spec["id"], "status": "completed"}})
        return None


@pytest.fixture
def acp_files(tmp_path: Path) -> FakeAcpFiles:
    return FakeAcpFiles(tmp_path)


@pytest.fixture
async def start_acp(acp_files: FakeAcpFiles) -> AsyncIterator[StartAcp]:
    started: list[tuple[AcpBrain, EventRecorder]] = []

    async def start(**overrides: Any) -> tuple[AcpBrain, EventRecorder]:
        brain_cls = get_brain_class("acp")
        assert issubclass(brain_cls, AcpBrain)
        config = acp_files.config(command=(sys.executable, "-c", AGENT_MAIN), **overrides)
        brain = brain_cls(config)
        recorder = EventRecorder(brain)
        started.append((brain, recorder))
        await brain.start()
        return brain, recorder

    yield start
    for brain, recorder in started:
        await brain.stop()
        await recorder.cancel()


def _kinds(events: list[BrainEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


HISTORY = [
    {"user": "earlier question"},
    {"text": "earlier answer"},
    {"tool": {"id": "old", "title": "old tool", "status": "completed"}},
    {"text": "more of the earlier answer"},
    {"mode": "plan"},
]


async def test_a_replay_after_the_load_answer_is_not_shown(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    modes = {"current": "plan", "available": ["default", "plan"]}
    acp_files.scenario(
        [{"text": "fresh"}], load_session=True, late_history=True, history=HISTORY, modes=modes
    )
    brain, rec = await start_acp(backend_session_id="sess-old", permission_mode="plan")
    # Nothing of the replay became an event, though all of it came after the answer.
    await asyncio.sleep(0.1)
    assert rec.events == []
    assert brain.current_mode == "plan"
    await brain.send("hi")
    await rec.wait_for(TurnEnded)
    assert _kinds(rec.events) == ["TextDelta", "AssistantText", "TurnEnded"]
    assert [e.text for e in rec.of(AssistantText)] == ["fresh"]
    assert acp_files.requests("session/set_mode") == []


async def test_a_denied_call_the_agent_leaves_open_fails_at_turn_end(
    acp_files: FakeAcpFiles, start_acp: StartAcp
) -> None:
    shell = {"id": "t1", "title": "touch x"}
    acp_files.scenario(
        [{"tool": shell, "permission": True}, {"text": "done"}],
        [{"tool": {**shell, "id": "t2"}, "permission": True}, {"text": "done again"}],
        gemini_tools=True,
    )
    brain, rec = await start_acp()

    await brain.send("deny it")
    await rec.wait_for(PermissionAsked)
    await brain.answer_permission(rec.of(PermissionAsked)[0].request_id, PermissionAnswer("deny"))
    await rec.wait_for(TurnEnded)
    kinds = _kinds(rec.events)
    assert kinds.index("ToolCall") < kinds.index("ToolResult") < kinds.index("TurnEnded"), kinds
    [result] = rec.of(ToolResult)
    assert result.tool_call_id == "t1" and result.is_error
    assert "denied" in result.output

    # An allowed call is finished by the agent itself: exactly one result, not an error.
    await brain.send("allow it")
    await rec.wait_for(PermissionAsked, count=2)
    asked = rec.of(PermissionAsked)[1]
    await brain.answer_permission(asked.request_id, PermissionAnswer("allow_once"))
    await rec.wait_for(TurnEnded, count=2)
    results = rec.of(ToolResult)
    assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", True), ("t2", False)]
    assert [c.tool_call_id for c in rec.of(ToolCall)] == ["t1", "t2"]
    assert [t.text for t in rec.of(AssistantText)] == ["done", "done again"]
    assert len(rec.of(TextDelta)) == 2


def test_a_start_up_error_names_the_cause_from_its_data() -> None:
    session = AcpSession(label="Gemini CLI", cwd="/", mapper=UpdateMapper(), emit=lambda e: None)
    details = {"details": "No previous sessions found for this project."}
    message = session.request_failed(
        "start its session", RequestError(-32603, "Internal error", details), "hint"
    )
    assert message == (
        "Gemini CLI could not start its session: Internal error: "
        "No previous sessions found for this project. (-32603)."
    )
    plain = session.request_failed("start its session", RequestError(-32603, "Boom"), "hint")
    assert plain == "Gemini CLI could not start its session: Boom (-32603)."
