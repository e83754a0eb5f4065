"""What a user does in every real-CLI test, through the public HTTP API, for any backend.

Also the real agents themselves as profiles see them (``Agent``, ``real_agent``), so a
scenario can run once per backend by parametrising one fixture.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from app.main import create_app
from app.services.store import store
from app.settings import Settings
from tests.conftest import FAKES, LiveServer
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, kinds, of_kind, send, wait_for_events

if TYPE_CHECKING:
    from tests.real.conftest import ProfileFactory

# First start of an agent (node start-up, session set-up) plus a turn, with room to spare.
TIMEOUT = 45.0


@dataclass(frozen=True)
class Agent:
    """One real agent CLI as a profile sees it."""

    backend: str
    command: list[str]
    env: dict[str, str]

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])


def real_agent(request: pytest.FixtureRequest, backend: str) -> Agent:
    """The installed CLI of ``backend`` with its offline environment (fixtures of conftest,
    and for OpenCode and pi of ``common``, which the asking module imports); a missing one
    skips (or, in CI, fails) only the tests that ask for it."""
    if backend == "claude":
        claude: Path = request.getfixturevalue("claude_bin")
        return Agent("claude", [str(claude)], request.getfixturevalue("claude_env"))
    if backend == "grok":
        grok: Path = request.getfixturevalue("grok_bin")
        return Agent("grok", [str(grok)], request.getfixturevalue("grok_env"))
    if backend == "gemini":
        gemini: Path = request.getfixturevalue("gemini_bin")
        return Agent("gemini", [str(gemini), "--acp"], request.getfixturevalue("gemini_env"))
    if backend == "claude-acp":
        adapter: Path = request.getfixturevalue("claude_acp_bin")
        return Agent("claude-acp", [str(adapter)], request.getfixturevalue("claude_acp_env"))
    if backend == "opencode":
        opencode: Path = request.getfixturevalue("opencode_bin")
        return Agent("opencode", [str(opencode), "acp"], request.getfixturevalue("opencode_env"))
    if backend == "copilot":
        copilot: Path = request.getfixturevalue("copilot_bin")
        return Agent("copilot", [str(copilot), "--acp"], request.getfixturevalue("copilot_env"))
    if backend == "pi":
        pi_acp: Path = request.getfixturevalue("pi_acp_bin")
        return Agent("pi", [str(pi_acp)], request.getfixturevalue("pi_env"))
    if backend == "qwen":
        qwen: Path = request.getfixturevalue("qwen_bin")
        return Agent("qwen", [str(qwen), "--acp"], request.getfixturevalue("qwen_env"))
    raise ValueError(f"no real agent set up for {backend!r}")


def claude_profile_body(
    project_dir: Path, claude_bin: Path, claude_env: dict[str, str]
) -> dict[str, Any]:
    """The profile fields that run the real ``claude`` in ``project_dir``."""
    return {
        "name": "real claude",
        "backend": "claude",
        "cwd": str(project_dir),
        "command": [str(claude_bin)],
        "env": claude_env,
    }


async def new_claude_session(
    client: httpx.AsyncClient, project_dir: Path, claude_bin: Path, claude_env: dict[str, str]
) -> str:
    """A fresh chat session of a new profile running the real ``claude`` in ``project_dir``."""
    body = claude_profile_body(project_dir, claude_bin, claude_env)
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    r = await client.post("/api/sessions", json={"profile_id": r.json()["id"]})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def new_session(
    client: httpx.AsyncClient, make_profile: ProfileFactory, agent: Agent, **fields: Any
) -> str:
    """A fresh chat session of a new profile running ``agent`` with ``fields``."""
    profile = await make_profile(agent.backend, agent.command, agent.env, **fields)
    r = await client.post("/api/sessions", json={"profile_id": profile["id"]})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def all_events(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    r = await client.get(f"/api/sessions/{session_id}/events")
    events: list[dict[str, Any]] = r.json()["events"]
    return events


def turn_of(events: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The events of the ``n``-th turn (1-based), from its user message to its turn end."""
    starts = [i for i, e in enumerate(events) if e["kind"] == "user_message"]
    ends = [i for i, e in enumerate(events) if e["kind"] == "turn_end"]
    return events[starts[n - 1] : ends[n - 1] + 1]


def backend_pid(server: LiveServer, session_id: str) -> int:
    """The pid of the session's live agent process."""
    state = server.app.state.angelia
    assert state.manager.is_live(session_id)
    pid = store.get_session(state.engine, session_id).backend_pid
    assert pid, "no backend_pid recorded for a live session"
    return int(pid)


def mark_server(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The test MCP server (its log, its profile entry); it answers ``marked <text>``."""
    log = tmp_path / "mcp.jsonl"
    return log, {"command": sys.executable, "args": [str(FAKES / "stdio_mcp_server.py"), str(log)]}


def process_tree(root: int) -> dict[int, str]:
    """``root`` and every process below it: pid → its command line as ``ps`` shows it."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grown = {root}, True
    while grown:
        below = {pid for pid, parent in parents.items() if parent in tree}
        grown = not below <= tree
        tree |= below
    lines = {}
    for pid in tree:
        try:
            lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return lines


def mcp_calls(log: Path) -> list[tuple[str, Any]]:
    """The (tool, arguments) of every call the test MCP server received."""
    received = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    calls = [m["params"] for m in received if m.get("method") == "tools/call"]
    return [(c["name"], c["arguments"]) for c in calls]


async def use_mark_again_refused_by(
    client: httpx.AsyncClient, session_id: str, log: Path, rule: str
) -> list[dict[str, Any]]:
    """Ask for the test MCP server's tool again, as turn 2: ``rule`` refuses the call before
    it reaches the server, and the tool's result says so. The second turn's events."""
    calls = mcp_calls(log)
    second = turn_of(await take_turn(client, session_id, "use mark again", turn=2), 2)
    decisions = of_kind(second, "permission_decision")
    assert [(d["decision"], d["source"], d["rule"]) for d in decisions] == [
        ("deny", "rule", rule)
    ], decisions
    assert [r["is_error"] for r in of_kind(second, "tool_result")] == [True]
    assert mcp_calls(log) == calls
    return second


async def the_pending_request(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    """The one question waiting for an answer in the session (waits for it to arrive)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        r = await client.get(
            "/api/permissions", params={"status": "pending", "session_id": session_id}
        )
        rows: list[dict[str, Any]] = r.json()
        if rows or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    if not rows:
        # What the session did instead is what tells a slow agent from a wrong one.
        events = (await client.get(f"/api/sessions/{session_id}/events")).json()
        raise AssertionError(f"no question arrived; the session's events: {events}")
    assert len(rows) == 1, rows
    return rows[0]


async def permission_rows(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    """Every question of the session, answered or not."""
    r = await client.get("/api/permissions", params={"session_id": session_id})
    rows: list[dict[str, Any]] = r.json()
    return rows


async def decide(client: httpx.AsyncClient, permission_id: str, decision: str) -> dict[str, Any]:
    r = await client.post(f"/api/permissions/{permission_id}/decision", json={"decision": decision})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["decision"] == decision and body["source"] == "user", body
    return body


async def take_turn(
    client: httpx.AsyncClient, session_id: str, text: str, turn: int = 1
) -> list[dict[str, Any]]:
    """Send ``text`` and wait for the session's ``turn``-th turn to end: every event so far."""
    await send(client, session_id, text)
    return await wait_for_events(client, session_id, count("turn_end", turn), timeout=TIMEOUT)


async def say_hi_on_model(
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    agent: Agent,
    fake_model: FakeModelServer,
    model: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A new session of a profile naming ``model`` says hi without an error: its events
    and the model calls of that turn."""
    sid = await new_session(client, make_profile, agent, model=model)
    events = await take_turn(client, sid, "say hi")
    assert not of_kind(events, "error"), of_kind(events, "error")
    return events, requests_with(fake_model, "say hi")


async def answer(
    client: httpx.AsyncClient, session_id: str, permission_id: str, decision: str, turn: int = 1
) -> list[dict[str, Any]]:
    """Answer the question and wait for turn ``turn`` to end: every event so far."""
    await decide(client, permission_id, decision)
    return await wait_for_events(client, session_id, count("turn_end", turn), timeout=TIMEOUT)


def model_texts(entry: dict[str, Any]) -> list[str]:
    """Every text, tool call and tool result in a logged Anthropic, OpenAI or Gemini request."""
    body = entry.get("body")
    if not isinstance(body, dict) or "contents" not in body:
        return request_texts(entry)
    out: list[str] = []
    for content in body["contents"]:
        for part in content.get("parts") or []:
            if "text" in part:
                out.append(str(part["text"]))
            for key in ("functionCall", "functionResponse"):
                if key in part:
                    out.append(json.dumps(part[key]))
    return out


def main_requests(fake_model: FakeModelServer) -> list[dict[str, Any]]:
    """The model calls of the conversation itself: tools offered, no JSON-only side calls."""
    out = []
    for entry in fake_model.requests():
        body = entry.get("body")
        reply = entry.get("reply") or {}
        offers_tools = isinstance(body, dict) and bool(body.get("tools"))
        if entry["method"] == "POST" and offers_tools and reply.get("why") != "json_schema":
            out.append(entry)
    return out


def requests_with(fake_model: FakeModelServer, text: str) -> list[dict[str, Any]]:
    """The conversation's model calls in which ``text`` appears anywhere."""
    return [e for e in main_requests(fake_model) if any(text in t for t in model_texts(e))]


async def interrupt_a_slow_reply(
    client: httpx.AsyncClient, session_id: str, fake_model: FakeModelServer
) -> dict[str, Any]:
    """Stop a reply streamed slowly, then check the process takes the next turn.

    Returns the interrupted turn's ``turn_end`` (each backend names the stop its own way;
    Angelia reports ``cancelled`` for all)."""
    fake_model.set_rules({"chunk_delay": 0.3, "default": " ".join(["slow"] * 100)})
    await send(client, session_id, "talk slowly")
    await wait_for_events(client, session_id, count("text_delta", 2), timeout=TIMEOUT)
    asked = time.monotonic()
    r = await client.post(f"/api/sessions/{session_id}/interrupt")
    assert r.status_code == 202, r.text
    events = await wait_for_events(client, session_id, count("turn_end"), timeout=TIMEOUT)
    took = time.monotonic() - asked

    end = of_kind(events, "turn_end")[0]
    assert (end["stop_reason"], end["is_error"]) == ("cancelled", False), end
    streamed = "".join(d["text"] for d in of_kind(events, "text_delta"))
    assert 0 < streamed.count("slow") < 100, streamed
    assert took < 5, took
    fake_model.set_rules({"chunk_delay": 0.0})
    await send(client, session_id, "say hi")
    events = await wait_for_events(client, session_id, count("turn_end", 2), timeout=TIMEOUT)
    # The next turn ends as a turn does (Claude Code's stream-json calls it "success").
    last = of_kind(events, "turn_end")[-1]
    assert last["stop_reason"] in ("end_turn", "success") and last["is_error"] is False, last
    assert of_kind(events, "assistant_message")[-1]["text"] == "hello from fake"
    return end


@asynccontextmanager
async def restarted_app(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app started again on the same data (stop the old server first)."""
    restarted = LiveServer(create_app(settings))
    await restarted.start()
    try:
        async with restarted.client() as client:
            yield client
    finally:
        await restarted.stop()


async def say_again_after_restart(
    settings: Settings, session_id: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Start the app again (its server stopped) and take a second turn, "say again":
    (the session's events, the session) as the restarted app shows them."""
    async with restarted_app(settings) as client:
        r = await client.get(f"/api/sessions/{session_id}")
        assert r.json()["status"] == "idle", r.json()
        await send(client, session_id, "say again")
        events = await wait_for_events(client, session_id, count("turn_end", 2), timeout=TIMEOUT)
        session: dict[str, Any] = (await client.get(f"/api/sessions/{session_id}")).json()
    return events, session


def assert_resumed_quietly(
    events: list[dict[str, Any]],
    session: dict[str, Any],
    backend_session_id: str,
    fake_model: FakeModelServer,
    earlier: tuple[str, ...],
) -> None:
    """After a restart and a second turn ("say again"): nothing of the first turn came back
    as part of the second, the same agent session went on, and the model saw ``earlier``."""
    assert not of_kind(events, "error"), of_kind(events, "error")
    second = turn_of(events, 2)
    assert [a["text"] for a in of_kind(second, "assistant_message")] == ["hello from fake"]
    assert "".join(d["text"] for d in of_kind(second, "text_delta")) == "hello from fake"
    assert not of_kind(second, "tool_call") and not of_kind(second, "tool_result"), kinds(second)
    assert len(of_kind(events, "user_message")) == 2
    assert len(of_kind(events, "backend_session")) == 1
    assert session["backend_session_id"] == backend_session_id and session["turns"] == 2
    newest = requests_with(fake_model, "say again")
    assert newest, [e["reply"] for e in main_requests(fake_model)]
    history = model_texts(newest[-1])
    for expected in (*earlier, "say again"):
        assert any(expected in t for t in history), (expected, history)
