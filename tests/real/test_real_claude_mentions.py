"""@ mentions and the slash menu against real CLIs and the fake model server (offline).

* Real Claude Code: an ``@path`` in the message reaches the model as the path (the CLI
  also attaches the file); the project's ``.claude/commands/<name>.md`` and a skill are in
  the session page's slash list with their descriptions; ``/nosuchcommand`` ends its turn
  with a visible answer.
* Real claude-agent-acp, which advertises ``promptCapabilities.embeddedContext``: the
  mentioned file also goes as an embedded resource, so the model sees its content; an
  unknown command ends its turn with something shown.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.conftest import ProfileFactory
from tests.real.steps import TIMEOUT, main_requests, new_session, real_agent, turn_of

pytestmark = pytest.mark.real_cli

MARKER = "kumquat-ledger-7731"
COMMAND_DESCRIPTION = "Write the deploy notes for this week"
SKILL_DESCRIPTION = "Greets the user in a friendly way"


def make_project(root: Path) -> None:
    """A file to mention, a custom command with front matter and a project skill."""
    (root / "docs").mkdir()
    (root / "docs" / "notes.txt").write_text(f"The secret word is {MARKER}.\n")
    commands = root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "deploy-notes.md").write_text(
        f"---\ndescription: {COMMAND_DESCRIPTION}\nargument-hint: [week]\n---\n"
        "Write deploy notes for $ARGUMENTS\n"
    )
    skill = root / ".claude" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: greet\ndescription: {SKILL_DESCRIPTION}\n---\nSay hello warmly.\n"
    )


@pytest.fixture
def made_project(project_dir: Path) -> Path:
    """The project as it is before its session starts: the session lists it from then."""
    make_project(project_dir)
    return project_dir


def user_texts(fake_model: FakeModelServer) -> list[str]:
    return [text for entry in main_requests(fake_model) for text in request_texts(entry)]


async def test_a_mention_reaches_claude_code_and_custom_commands_are_described(
    made_project: Path,
    client: httpx.AsyncClient,
    project_dir: Path,
    claude_session: str,
    fake_model: FakeModelServer,
) -> None:
    sid = claude_session

    # The composer sends the picked file as "@<relative path>".
    r = await client.get(f"/api/sessions/{sid}/files", params={"q": "notes"})
    assert r.json()["files"][0] == "docs/notes.txt"
    await send(client, sid, "please summarise @docs/notes.txt")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    texts = user_texts(fake_model)
    assert any("please summarise @docs/notes.txt" in t for t in texts), texts
    # Claude Code reads a mentioned file itself and attaches it to the request.
    assert any(MARKER in t for t in texts)

    # Its initialize reply described the custom command and the skill; the page's slash
    # list shows them with those descriptions (the CLI marks both "(project)").
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    described = {
        li["data-cmd"]: li.select_one(".menu-desc").get_text()  # type: ignore[union-attr]
        for li in page.select("#slash-list li")
        if li.select_one(".menu-desc") is not None
    }
    assert described["deploy-notes"] == f"{COMMAND_DESCRIPTION} (project)"
    assert described["greet"] == f"{SKILL_DESCRIPTION} (project)"
    names = [li["data-cmd"] for li in page.select("#slash-list li")]
    assert "compact" in names

    # An unknown command goes to the model as text: the turn ends with a visible answer.
    await send(client, sid, "/nosuchcommand")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    last_turn = turn_of(events, 2)
    answers = of_kind(last_turn, "assistant_message")
    assert answers and answers[-1]["text"], last_turn
    assert of_kind(last_turn, "turn_end")[-1]["is_error"] is False
    assert any(t.strip() == "/nosuchcommand" for t in user_texts(fake_model))


async def test_an_acp_agent_with_embedded_context_gets_the_mentioned_file(
    request: pytest.FixtureRequest,
    client: httpx.AsyncClient,
    make_profile: ProfileFactory,
    project_dir: Path,
    fake_model: FakeModelServer,
) -> None:
    make_project(project_dir)
    agent = real_agent(request, "claude-acp")
    sid = await new_session(client, make_profile, agent)

    await send(client, sid, "what does @docs/notes.txt say?")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    texts = user_texts(fake_model)
    assert any("@docs/notes.txt" in t for t in texts), texts
    # The content came as the embedded resource: the adapter passes it on to the model
    # with the file's URI.
    embedded = [t for t in texts if MARKER in t]
    assert embedded, texts
    assert any((project_dir / "docs" / "notes.txt").resolve().as_uri() in t for t in embedded)

    # An unknown command ends its turn with a visible answer here too.
    await send(client, sid, "/nosuchcommand")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)
    last_turn = turn_of(events, 2)
    shown = of_kind(last_turn, "assistant_message") + of_kind(last_turn, "error")
    assert shown, last_turn
