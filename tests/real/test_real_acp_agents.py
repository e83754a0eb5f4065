"""Angelia end to end with real ACP agents against the scripted fake model server.

Pinned agents, each driven through the public HTTP API of a live server exactly as a user
would: ``gemini --acp`` (Gemini CLI, backend ``gemini``), ``claude-agent-acp`` (Claude
Code's ACP adapter, backend ``claude-acp``) and Grok Build (``grok``), and where a test
says so OpenCode and pi too (their set-up is ``common``'s). Every test runs once per agent
with a fresh HOME and its own fake model; the model's scripted rules (``run touch``,
``BASH: <cmd>``) are the ones every real-CLI test uses.

What each agent showed here (and ``docs/backends.md`` records):

* gemini resumes with ``session/load`` and streams the replay *after* answering it; the
  brain must not show that replay as a new turn. Its chat file is named after the minute
  the process opened it, so a load in the very minute the chat was created finds the file
  just reset and fails ("No previous sessions found for this project."); the resume test
  dates the chat file back to model the usual "restart later" case.
* claude-agent-acp resumes with ``session/resume`` (no replay) and starts new sessions in
  its "auto" mode, which asks nothing; the brain switches it to the profile's mode.
"""

# The fixtures are imported by name, which pytest needs and pyflakes calls redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.conftest import LiveServer
from tests.fakes.fake_model_server import FakeModelServer
from tests.helpers import count, kinds, of_kind, read_sse, send, seqs_of, wait_for_events
from tests.real.common import (  # noqa: F401 (fixtures real_agent asks for by name)
    PI_DENIED,
    node22_bin,
    opencode_bin,
    opencode_env,
    pi_acp_bin,
    pi_bin,
    pi_env,
)
from tests.real.steps import (
    TIMEOUT,
    Agent,
    all_events,
    assert_resumed_quietly,
    backend_pid,
    decide,
    main_requests,
    model_texts,
    real_agent,
    requests_with,
    say_again_after_restart,
    the_pending_request,
    turn_of,
)

pytestmark = pytest.mark.real_cli

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SESSION_ID = {"opencode": re.compile(r"^ses_"), "pi": re.compile(r".")}
OFFERED_TOOLS = {
    "opencode": {"bash", "write", "edit", "read"},
    "pi": {"read", "bash", "edit", "write"},
}
SLOW = "one two three four five"
OPENCODE_OPTIONS = [
    ("once", "Allow once", "allow_once"),
    ("always", "Always allow", "allow_always"),
]
OPENCODE_OPTIONS += [("reject", "Reject", "deny")]
AGENTS = ["gemini", "claude-acp", "grok", "qwen", "copilot"]


@pytest.fixture(params=AGENTS)
def agent(request: pytest.FixtureRequest) -> Agent:
    return real_agent(request, request.param)


# -- helpers ------------------------------------------------------------------------------------
def date_gemini_chat_back(home: Path, backend_session_id: str) -> None:
    """Rename gemini's chat file as if the chat had been created long ago.

    gemini-cli 0.61 names a chat ``session-<UTC minute>-<id[:8]>.jsonl`` and, on
    ``session/load``, first opens a fresh recording under the id it is asked to load. In the
    minute the chat was created that is the *same* file, and the fresh ``$set`` of its
    messages empties the conversation before the load reads it. A restart minutes later
    (the normal case) opens a separate file; this rename makes the test that case.
    """
    chats = list(home.glob(f".gemini/tmp/*/chats/session-*-{backend_session_id[:8]}.jsonl"))
    assert len(chats) == 1, chats
    chats[0].rename(chats[0].with_name(f"session-2000-01-01T00-00-{backend_session_id[:8]}.jsonl"))


def resume_lines(agent: Agent, backend_session_id: str) -> list[str]:
    """claude-agent-acp's own log lines that start a Claude query resuming the session."""
    logs = Path(agent.env["CLAUDE_AGENT_LOGS"])
    lines = [line for f in logs.glob("*") for line in f.read_text().splitlines()]
    return [line for line in lines if f"[session/query] sessionId={backend_session_id}" in line]


# -- tests --------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", [*AGENTS, "opencode", "pi"], indirect=True)
@pytest.mark.conformance("stream")
async def test_text_turns_stream_in_one_process(
    server: LiveServer,
    client: httpx.AsyncClient,
    agent: Agent,
    agent_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = agent_session
    reader = asyncio.create_task(
        read_sse(
            client,
            f"/api/sessions/{sid}/stream",
            until=lambda frames: frames[-1]["kind"] == "turn_end",
            timeout=TIMEOUT,
        )
    )
    started = time.monotonic()
    await send(client, sid, "say hi")
    frames = await reader
    first = time.monotonic() - started

    # Every stored event once, in order (a client that fell behind gets text pieces joined).
    assert seqs_of(frames) == list(range(1, len(seqs_of(frames)) + 1))
    assert frames[0]["kind"] == "user_message" and frames[0]["text"] == "say hi"
    k = kinds(frames)
    deltas = of_kind(frames, "text_delta")
    # A quick reply may come in one piece: OpenCode sends it so, and pieces that reach the
    # app together are merged, which on a loaded machine happens to any agent. That a reply
    # streams is shown below, where the model sends its pieces 0.1 s apart.
    assert len(deltas) >= 1, k
    assert "".join(d["text"] for d in deltas) == "hello from fake"
    assert [a["text"] for a in of_kind(frames, "assistant_message")] == ["hello from fake"], k
    last_delta = max(i for i, kind in enumerate(k) if kind == "text_delta")
    assert last_delta < k.index("assistant_message") < k.index("turn_end"), k
    turn_end = frames[-1]
    assert turn_end["is_error"] is False and turn_end["result"] == "hello from fake", turn_end
    assert turn_end["stop_reason"] == "end_turn"

    announced = of_kind(frames, "backend_session")
    assert len(announced) == 1, k
    backend_session_id = announced[0]["backend_session_id"]
    assert SESSION_ID.get(agent.backend, UUID_RE).match(backend_session_id), backend_session_id
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["backend_session_id"] == backend_session_id
    assert session["status"] == "live" and session["turns"] == 1

    # A second turn goes to the same process, in the same conversation.
    pid = backend_pid(server, sid)
    started = time.monotonic()
    await send(client, sid, "say hi again")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    following = time.monotonic() - started
    print(
        f"{agent.backend} turn latency through the app: first {first:.2f} s, next {following:.2f} s"
    )
    assert backend_pid(server, sid) == pid
    assert [a["text"] for a in of_kind(events, "assistant_message")] == ["hello from fake"] * 2
    assert not of_kind(events, "error"), of_kind(events, "error")
    assert len(of_kind(events, "backend_session")) == 1
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["turns"] == 2 and session["backend_session_id"] == backend_session_id
    second = requests_with(fake_model, "say hi again")
    assert second, [e["reply"] for e in main_requests(fake_model)]
    # grok wraps each prompt in <user_query> tags; copilot puts a <current_datetime> block
    # (and, in the first message, its instructions) before it.
    earlier = [re.sub(r"</?user_query>", "", t).strip() for t in model_texts(second[-1])]
    if agent.backend == "copilot":
        earlier = [t.rsplit("\n\n", 1)[-1] for t in earlier]
    assert "say hi" in earlier, model_texts(second[-1])
    if agent.backend in OFFERED_TOOLS:
        # The agent's own tools, offered as OpenAI functions; OpenCode's subagents are
        # denied outright (their questions would never arrive), so it offers no task tool.
        offered = {t["function"]["name"] for t in second[-1]["body"]["tools"]}
        assert OFFERED_TOOLS[agent.backend] <= offered and "task" not in offered, offered
        assert second[-1]["body"]["model"] == "fake-model" and second[-1]["body"].get("stream")

    # Pieces the model streams 0.1 s apart arrive as separate deltas (pieces that arrive
    # together are merged by the app).
    fake_model.set_rules({"chunk_delay": 0.1, "default": SLOW})
    await send(client, sid, "stream slowly")
    events = await wait_for_events(client, sid, count("turn_end", 3), timeout=TIMEOUT)
    deltas = of_kind(turn_of(events, 3), "text_delta")
    assert len(deltas) >= 3 and "".join(d["text"] for d in deltas) == SLOW, deltas
    assert of_kind(events, "assistant_message")[-1]["text"] == SLOW


# pi's gate offers yes or no only: "allow always" is not there to test.
PI_NO_ALLOW_ALWAYS = pytest.mark.conformance("allow_always", backend="pi", result="no")


@pytest.mark.parametrize(
    "agent", [*AGENTS, "opencode", pytest.param("pi", marks=PI_NO_ALLOW_ALWAYS)], indirect=True
)
@pytest.mark.conformance("tool_prompt")
async def test_allow_once_runs_the_tool(
    client: httpx.AsyncClient,
    agent: Agent,
    agent_session: str,
    project_dir: Path,
) -> None:
    sid = agent_session
    await send(client, sid, "run touch")
    # claude-agent-acp starts in "auto", which would just run the command: a question
    # arriving at all shows the brain put it in the profile's mode (default) first.
    request = await the_pending_request(client, sid)
    assert "touch made_by_fake.txt" in json.dumps([request["tool"], request["title"]]) or (
        request["input"].get("command") == "touch made_by_fake.txt"
    ), request
    kinds_offered = {o["choice"] for o in request["options"]}
    assert {"allow_once", "deny"} <= kinds_offered, request["options"]
    if agent.backend in ("opencode", "pi"):
        # The question is about the real call, in Claude's vocabulary for the profile's rules.
        assert request["tool"] == "Bash", request
        assert request["input"]["command"] == "touch made_by_fake.txt", request
    if agent.backend == "opencode":
        assert request["title"] == "touch made_by_fake.txt", request
        options = [(o["option_id"], o["label"], o["choice"]) for o in request["options"]]
        assert options == OPENCODE_OPTIONS, options
    if agent.backend == "pi":
        assert kinds_offered == {"allow_once", "deny"}, request["options"]
        # The card sits on the call the transcript shows, not on a call of its own.
        calls = of_kind(await all_events(client, sid), "tool_call")
        assert [c["tool_call_id"] for c in calls] == [request["tool_call_id"]], calls
    assert not (project_dir / "made_by_fake.txt").exists(), "the agent ran the tool unasked"
    assert (await client.get(f"/api/sessions/{sid}")).json()["status"] == "waiting"

    await decide(client, request["id"], "allow_once")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "made_by_fake.txt").exists()
    k = kinds(events)
    decisions = of_kind(events, "permission_decision")
    assert [(d["permission_id"], d["decision"]) for d in decisions] == [
        (request["id"], "allow_once")
    ]
    results = of_kind(events, "tool_result")
    assert len(results) == 1 and results[0]["is_error"] is False, results
    assert results[0]["tool_call_id"] == request["tool_call_id"]
    assert k.index("permission_request") < k.index("tool_result") < k.index("turn_end"), k
    assert of_kind(events, "assistant_message")[-1]["text"] == "done"
    assert events[-1]["kind"] in ("turn_end", "status") and not of_kind(events, "error")
    if agent.backend == "claude-acp":
        # The agent confirmed the switch away from "auto" before it asked anything.
        switched = of_kind(events, "mode_changed")
        assert [(m["mode"], m["source"]) for m in switched] == [("default", "backend")], switched
        assert k.index("mode_changed") < k.index("permission_request"), k
        session = (await client.get(f"/api/sessions/{sid}")).json()
        assert session["permission_mode"] == "default", session
    if agent.backend == "pi":
        # The gate came with the app: nothing was installed into pi's own folders.
        assert not (agent.home / ".pi" / "agent" / "extensions").exists()


@pytest.mark.parametrize("agent", [*AGENTS, "opencode", "pi"], indirect=True)
async def test_deny_is_reported_back(
    client: httpx.AsyncClient,
    agent: Agent,
    agent_session: str,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    sid = agent_session
    await send(client, sid, "BASH: touch denied.txt")
    request = await the_pending_request(client, sid)
    calls_before = len(main_requests(fake_model))
    await decide(client, request["id"], "deny")
    events = await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)

    assert not (project_dir / "denied.txt").exists()
    results = of_kind(events, "tool_result")
    assert len(results) == 1 and results[0]["is_error"] is True, results
    assert results[0]["tool_call_id"] == request["tool_call_id"]
    assert [d["decision"] for d in of_kind(events, "permission_decision")] == ["deny"]
    end = of_kind(events, "turn_end")[0]
    if agent.backend == "opencode":
        assert "rejected permission" in results[0]["output"], results
        # OpenCode does not call the model again after a rejection; the turn just ends.
        assert len(main_requests(fake_model)) == calls_before
        assert end["stop_reason"] == "end_turn" and not of_kind(events, "assistant_message")
    if agent.backend == "pi":
        # The gate's reason, which pi-acp sends only as terminal output, shows as the result.
        assert results[0]["output"] == PI_DENIED, results
        assert end["stop_reason"] == "end_turn" and end["is_error"] is False, end
        # pi gave the model the gate's reason and called it again: the turn went on.
        assert requests_with(fake_model, PI_DENIED)
        assert of_kind(events, "assistant_message")[-1]["text"] == "done"
    # The session carries on after the denied call.
    await send(client, sid, "say hi")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"


@pytest.mark.conformance("resume")
async def test_restart_resumes_the_agent_session(
    settings: Settings,
    server: LiveServer,
    client: httpx.AsyncClient,
    agent: Agent,
    agent_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = agent_session
    await send(client, sid, "say hi, and remember the word apricot")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    backend_session_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]
    assert backend_session_id
    await server.stop()
    if agent.backend == "gemini":
        date_gemini_chat_back(agent.home, backend_session_id)

    events, session = await say_again_after_restart(settings, sid)

    # The old conversation is not shown again: no replayed text, tools or extra messages.
    earlier = ("remember the word apricot", "hello from fake")
    assert_resumed_quietly(events, session, backend_session_id, fake_model, earlier)
    if agent.backend == "claude-acp":
        # Two Claude queries for the session: the first new, the second a session/resume.
        lines = resume_lines(agent, backend_session_id)
        assert len(lines) == 2, lines
        assert "resume=none" in lines[0] and f"resume={backend_session_id}" in lines[1], lines


@pytest.mark.conformance("model_switch", result={"gemini": "refused", "copilot": "refused"})
async def test_switch_model_through_the_agents_model_option(
    client: httpx.AsyncClient, agent: Agent, agent_session: str, fake_model: FakeModelServer
) -> None:
    sid = agent_session
    await send(client, sid, "first turn")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    offered = (await client.get(f"/api/sessions/{sid}/models")).json()
    if agent.backend in ("gemini", "copilot"):
        # Gemini CLI has no model config option, nor has Copilot CLI with a provider of
        # one's own: the switch is refused, not pretended.
        assert offered["models"] == []
        r = await client.post(f"/api/sessions/{sid}/model", json={"model": "gemini-2.5-pro"})
        assert r.status_code == 422 and "offers no model choice" in r.text, r.text
        assert (await client.get(f"/api/sessions/{sid}")).json()["model"] is None
        return
    # claude-agent-acp has a model config option; grok lists the fake's /v1/models and
    # switches with session/set_model; qwen's option lists its settings' models as
    # "<id>(<auth type>)" and sends the bare id to the model.
    other, sent = {
        "grok": ("fake-model", "fake-model"),
        "qwen": ("fake-model-2(openai)", "fake-model-2"),
    }.get(agent.backend, ("haiku", "haiku"))
    assert other in {m["id"] for m in offered["models"]}, offered
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": "no-such-model"})
    assert r.status_code == 422 and other in r.text, r.text
    r = await client.post(f"/api/sessions/{sid}/model", json={"model": other})
    assert r.status_code == 200, r.text
    assert (await client.get(f"/api/sessions/{sid}/models")).json()["current"] == other
    await send(client, sid, "second turn")
    await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    asked = [str(e["body"].get("model")) for e in requests_with(fake_model, "second turn")]
    assert asked and all(sent in m for m in asked), asked
