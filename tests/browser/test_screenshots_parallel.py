"""The user guide's screenshots of parallel agents (docs/screenshots/board.png,
review.png, conflict.png, split.png, finish.png), taken from the real pages over a real
repository: two sessions in worktrees that changed the same line, one merged, and a third
waiting on an approval; a session's edit in the split view, and its finish panel once
another session's work reached main first. Written only with ANGELIA_SCREENSHOTS=1, like
tests/browser/test_screenshots.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, expect

from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS
from tests.browser.demo import AUTH_AFTER, AUTH_BEFORE, write_events
from tests.browser.test_approvals import bash
from tests.browser.test_screenshots import SIZE, shots  # noqa: F401  (the fixture)
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import send
from tests.services.git.conftest import commit_all, init_repo

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="set ANGELIA_SCREENSHOTS=1"
    ),
]

TEST_AFTER = "from src.auth import expiry\n\n\ndef test_expiry_uses_the_setting():\n"
TEST_AFTER += "    assert expiry() > clock.now()\n"


async def worktree_session(
    client: httpx.AsyncClient, profile_id: str, title: str
) -> tuple[str, Path]:
    r = await client.post(
        "/api/sessions", json={"profile_id": profile_id, "title": title, "worktree": True}
    )
    assert r.status_code == 201, r.text
    return r.json()["id"], Path(r.json()["worktree"]["path"])


async def repo_profile(
    client: httpx.AsyncClient, cwd: Path, fake: dict[str, Any], files: dict[str, str]
) -> str:
    """``cwd`` as a repository on ``main`` holding ``files``, and a profile there whose
    sessions each get a worktree; returns the profile's id."""
    init_repo(cwd)
    for name, text in files.items():
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        (cwd / name).write_text(text)
    commit_all(cwd, "Start")
    body = {
        "name": "app",
        "backend": "claude",
        "cwd": str(cwd),
        "model": "sonnet",
        "command": fake["command"],
        "env": fake["env"],
        "worktree_default": True,
    }
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    profile_id: str = r.json()["id"]
    return profile_id


async def light_context(browser: Browser) -> BrowserContext:
    context = await browser.new_context(viewport=SIZE, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    return context


def answered(server: LiveServer, sid: str, ask: str, reply: str) -> None:
    write_events(
        server,
        sid,
        [
            (0, "user_message", {"text": ask}),
            (9.5, "assistant_message", {"text": reply, "message_id": "m1"}),
            (9.6, "turn_end", {"stop_reason": "end_turn", "cost_usd": 0.0412}),
        ],
    )


async def test_screenshots_of_parallel_agents(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    fake_claude: dict[str, Any],
    shots: tuple[Path, Path],  # noqa: F811
) -> None:
    out, cwd = shots
    placeholder = "def test_placeholder():\n    pass\n"
    files = {"src/auth.py": AUTH_BEFORE, "tests/test_auth.py": placeholder}
    profile_id = await repo_profile(client, cwd, fake_claude, files)

    # Two agents changed the same line of src/auth.py, each in its own worktree.
    first, first_dir = await worktree_session(
        client, profile_id, "Read the token lifetime from settings"
    )
    (first_dir / "src" / "auth.py").write_text(AUTH_AFTER)
    (first_dir / "tests" / "test_auth.py").write_text(TEST_AFTER)
    answered(
        server,
        first,
        "Take the token lifetime from settings.TOKEN_MINUTES",
        "The expiry now reads `settings.TOKEN_MINUTES`, and a test checks it.",
    )
    second, second_dir = await worktree_session(client, profile_id, "Make the expiry configurable")
    (second_dir / "src" / "auth.py").write_text(
        AUTH_BEFORE.replace("timedelta(minutes=30)", "timedelta(minutes=config.expiry)")
    )
    answered(
        server,
        second,
        "Let the config file set the expiry",
        "The expiry comes from `config.expiry` now.",
    )

    # A third asks before running the tests.
    write_scenario(fake_claude["scenario"], [[bash("pytest -q tests/test_auth.py")]])
    third, _ = await worktree_session(client, profile_id, "Run the auth tests")
    await send(client, third, "run the auth tests")

    context = await light_context(browser)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/board?token={TOKEN}")
        await expect(page.get_by_text("pytest -q tests/test_auth.py").first).to_be_visible()
        await expect(page.get_by_text("2 files changed").first).to_be_visible()
        await page.screenshot(path=str(out / "board.png"))

        # Review comments on the first session's diff.
        comment = {"path": "src/auth.py", "line": 5, "side": "new"}
        r = await client.post(
            f"/api/sessions/{first}/comments",
            json=comment | {"body": "Keep the 30-minute default when the setting is missing."},
        )
        assert r.status_code == 201, r.text
        await page.goto(f"{server.url}/sessions/{first}/changes")
        await expect(page.locator(".review-item")).to_have_count(1)
        # The diff with its comment under the line, and the list to send from.
        await page.locator("#changes-summary").evaluate("e => e.scrollIntoView()")
        await page.screenshot(path=str(out / "review.png"))

        # The first merges; the second then cannot be merged, and the panel says why.
        for sid, message in ((first, "Read the token lifetime"), (second, "Configurable expiry")):
            r = await client.post(f"/api/sessions/{sid}/commit", json={"message": message})
            assert r.status_code == 201, r.text
        r = await client.post(f"/api/sessions/{first}/merge", json={"strategy": "ff"})
        assert r.status_code == 200, r.text
        await page.goto(f"{server.url}/sessions/{second}/changes")
        await expect(page.locator("#finish-merge-why")).to_contain_text("src/auth.py")
        await expect(page.locator("#finish-resolve-conflicts")).to_be_visible()
        await page.locator("#finish").scroll_into_view_if_needed()
        await page.screenshot(path=str(out / "conflict.png"))
    finally:
        await context.close()


AUTH_SETTINGS = AUTH_BEFORE.replace(
    "timedelta\n\n", "timedelta\n\nfrom app.settings import TOKEN_MINUTES, clock\n\n"
).replace(
    "datetime.now() + timedelta(minutes=30)", "clock.now() + timedelta(minutes=TOKEN_MINUTES)"
)


async def test_screenshots_of_the_split_view_and_the_finish_panel(
    shots: tuple[Path, Path],  # noqa: F811
    fake_claude: dict[str, Any],
    server: LiveServer,
    client: httpx.AsyncClient,
    browser: Browser,
) -> None:
    """docs/screenshots/split.png: a worktree session's edit, Before beside After;
    finish.png: its panel once committed, after another session's work reached main
    first (so only a merge commit or a squash is offered, and the page says why)."""
    out, cwd = shots
    files = {"src/auth.py": AUTH_BEFORE, "README.md": "# app\n\nRun it with `make run`.\n"}
    profile_id = await repo_profile(client, cwd, fake_claude, files)

    sid, folder = await worktree_session(
        client, profile_id, "Read the token lifetime from settings"
    )
    (folder / "src" / "auth.py").write_text(AUTH_SETTINGS)
    (folder / "tests").mkdir(exist_ok=True)
    (folder / "tests" / "test_auth.py").write_text(TEST_AFTER)
    answered(
        server,
        sid,
        "Take the token lifetime from settings.TOKEN_MINUTES",
        "The expiry now reads `settings.TOKEN_MINUTES`, and a test checks it.",
    )
    # Another agent's work is merged into main first.
    other, other_dir = await worktree_session(client, profile_id, "Say how to run the tests")
    (other_dir / "README.md").write_text(
        "# app\n\nRun it with `make run`, test it with `make test`.\n"
    )
    r = await client.post(f"/api/sessions/{other}/commit", json={"message": "Say how to test"})
    assert r.status_code == 201, r.text
    r = await client.post(f"/api/sessions/{other}/merge", json={"strategy": "ff"})
    assert r.status_code == 200, r.text

    context = await light_context(browser)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}/changes?view=split&token={TOKEN}")
        await expect(page.locator("table.split-diff")).to_have_count(2)
        await page.locator("#changes-summary").evaluate("e => e.scrollIntoView()")
        await page.screenshot(path=str(out / "split.png"))

        panel = page.locator("#finish")
        await panel.get_by_role("button", name="Commit all changes").click()
        await expect(panel.locator("#finish-done")).to_contain_text("Committed")
        await expect(panel.locator("#finish-not-possible")).to_contain_text("Fast-forward")
        await page.locator("h1.session-title").evaluate("e => e.scrollIntoView()")
        await page.screenshot(path=str(out / "finish.png"))
    finally:
        await context.close()
