"""A Claude Code session run in a terminal (``claude -p``), followed live in the browser.

The real CLI writes its transcript under ``$CLAUDE_CONFIG_DIR/projects`` while the app's
page follows the file: what it writes shows on screen without a reload, the page stays
read-only while that CLI runs, and once it has exited the session is continued here with
``--resume``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing, settled
from tests.fakes.fake_model_server import FakeModelServer, request_texts
from tests.helpers import of_kind, wait_for_events
from tests.real.conftest import claude_profile_body

pytestmark = [pytest.mark.real_cli, pytest.mark.browser]

WAIT_S = 60.0
# Long enough for the page to be opened and checked while the CLI waits on its tool.
SLEEP_S = 6


@pytest.fixture
def fake_rules() -> dict[str, object]:
    return {
        "rules": [
            {
                "match": "take your time",
                "tool": "Bash",
                "input": {"command": f"sleep {SLEEP_S} && echo slept", "description": "wait"},
            },
            {"match": "and now", "text": "continued in the app"},
        ],
        "after_tool": "finished after the pause",
    }


async def wait_for_file(projects: Path, what: bytes, cli: asyncio.subprocess.Process) -> Path:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and cli.returncode is None:
        for path in projects.glob("*/*.jsonl"):
            if what in path.read_bytes():
                return path
        await asyncio.sleep(0.1)
    out = await cli.stdout.read() if cli.returncode is not None and cli.stdout else b""
    raise AssertionError(f"no transcript holding {what!r} under {projects}: {out!r}")


async def test_a_terminal_session_is_followed_live_then_continued_here(
    browsing: Browsing,
    client: httpx.AsyncClient,
    claude_bin: Path,
    claude_env: dict[str, str],
    fake_model: FakeModelServer,
    project_dir: Path,
) -> None:
    # The app reads Claude Code's folder from CLAUDE_CONFIG_DIR (tests/conftest.py).
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    env = claude_env | {"CLAUDE_CONFIG_DIR": str(config)}
    # The user's profile for that folder, running the same CLI: the import goes to it.
    body = claude_profile_body(project_dir, claude_bin, env)
    assert (await client.post("/api/profiles", json=body)).status_code == 201
    # The prompt first: --allowedTools takes every word after it.
    argv = [str(claude_bin), "-p", "please take your time", "--allowedTools", "Bash"]
    cli = await asyncio.create_subprocess_exec(
        *argv,
        cwd=project_dir,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        path = await wait_for_file(config / "projects", b'"tool_use"', cli)

        # Listed on the history page as running, and opened here.
        await browsing.sign_in("/sessions")
        page = browsing.page
        row = page.locator(f"#terminal-sessions li[data-uuid='{path.stem}']")
        await expect(row).to_contain_text("still running in a terminal")
        await row.get_by_role("button", name="Open here").click()
        await expect(page.locator("#follow-banner")).to_contain_text("Following this session live")
        await expect(page.locator("#follow-running")).to_contain_text("claude still runs")
        await expect(page.locator("#composer")).to_have_count(0)
        call = page.locator(".tool-call").first
        await expect(call.locator(".tool")).to_have_text("Bash")
        assert cli.returncode is None, "the CLI ended before the page was checked"
        session_id = page.url.rsplit("/", 1)[1]

        # Taking over while it runs is refused, with the reason.
        await page.get_by_role("button", name="Continue here").click()
        await expect(page.locator("#continue-error")).to_contain_text(
            "quit it in its terminal first"
        )

        # What the CLI writes after its tool shows up without a reload.
        answer = page.locator(".msg.assistant .md").last
        await expect(answer).to_have_text("finished after the pause", timeout=WAIT_S * 1000)
        out, _ = await asyncio.wait_for(cli.communicate(), WAIT_S)
        assert cli.returncode == 0, out.decode(errors="replace")
    finally:
        if cli.returncode is None:
            cli.kill()
            await cli.wait()

    events = (await client.get(f"/api/sessions/{session_id}/events")).json()["events"]
    kinds = [e["kind"] for e in events]
    assert kinds.count("turn_end") == 1, kinds
    assert kinds[:5] == [
        "user_message",
        "tool_call",
        "tool_result",
        "assistant_message",
        "turn_end",
    ]
    [result] = of_kind(events, "tool_result")
    assert "slept" in str(result.get("output"))

    # The page learns that the terminal's CLI is gone (within the follower's check spell).
    await expect(page.locator("#follow-running")).to_have_text(
        "Its CLI has exited: it can be continued here.", timeout=WAIT_S * 1000
    )
    await expect(page.locator("[data-note='terminal_exited']")).to_have_count(1)

    # Continue here, and the app resumes that session.
    await page.get_by_role("button", name="Continue here").click()
    await expect(page.locator("#follow-banner")).to_have_count(0)
    # The page swaps in its composer as the session becomes this app's: type into the one
    # that stays, once nothing is swapping any more.
    await settled(page)
    await expect(page.locator("#composer-text")).to_be_editable()
    await page.locator("#composer-text").fill("and now from here")
    await page.locator("#composer-text").press("Enter")
    await expect(page.locator(".msg.user", has_text="and now from here")).to_have_count(1)
    await wait_for_events(
        client, session_id, lambda evs: len(of_kind(evs, "turn_end")) == 2, timeout=WAIT_S
    )
    await expect(page.locator(".msg.assistant .md").last).to_have_text("continued in the app")
    # The resumed CLI sent the terminal's turn along: it went on with the same session.
    main = [e for e in fake_model.message_requests() if "and now from here" in request_texts(e)]
    assert main and "please take your time" in request_texts(main[-1])
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []
