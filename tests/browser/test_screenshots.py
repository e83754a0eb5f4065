"""The screenshots in docs/screenshots, taken from the real pages.

They are only written when ANGELIA_SCREENSHOTS=1, so an ordinary test run leaves the
tracked images alone:

    ANGELIA_SCREENSHOTS=1 .ci/in-netns .venv/bin/python -m pytest tests/browser/test_screenshots.py

ANGELIA_SCREENSHOTS_DIR writes them somewhere else (to compare before committing).
"""

from __future__ import annotations

import base64
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect
from sqlalchemy import text

from app.schemas import ProfileCreate
from app.services.store import store
from tests.browser.conftest import CSP_PROBE, TIMEOUT_MS
from tests.browser.demo import (
    AUTH_AFTER,
    finished_conversation,
    finished_session,
    make_profile,
    make_session,
    set_session,
    write_events,
)
from tests.browser.demo_prompts import (
    PLAN_TEXT,
    QUESTION,
    finished_with_models,
    subagent_conversation,
)
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.helpers import send

ONLY_WHEN_ASKED = pytest.mark.skipif(
    os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="set ANGELIA_SCREENSHOTS=1"
)
pytestmark = [pytest.mark.browser, ONLY_WHEN_ASKED]

SIZE = {"width": 1200, "height": 800}
IMAGE_REPLY = (
    "The headings sit on the rows because `.nav-heading` has no top margin. "
    "I'll give it `margin-top: 0.75rem` and keep the first one flush."
)


def rewind_answer(cwd: Path) -> dict[str, Any]:
    """What the fake CLI answers a rewind with: the fix and its test put back."""
    files = [str(cwd / "src" / "auth.py"), str(cwd / "tests" / "test_login.py")]
    return {"filesChanged": files, "insertions": 3, "deletions": 5}


DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_projects"
SHOP = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def shots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Where the images go, and the project folder (shown as "~/src/app", as it would be
    on a real machine)."""
    out = Path(os.environ.get("ANGELIA_SCREENSHOTS_DIR") or DOCS)
    out.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(tmp_path))
    cwd = tmp_path / "src" / "app"
    cwd.mkdir(parents=True)
    return out, cwd


async def test_screenshots(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    fake_claude: dict[str, Any],
    shots: tuple[Path, Path],
) -> None:
    out, cwd = shots

    # An older session or two, so the history page has days to group.
    profile_id = await make_profile(client, cwd, name="app")
    now = datetime.now(UTC)
    for title, days, status, cost, turns in (
        ("Add CSV export to the reports page", 1, "idle", 0.1834, 6),
        ("Upgrade to Python 3.13", 3, "failed", 0.0911, 2),
        ("Why is the nightly build slow?", 3, "ended", 0.0422, 3),
    ):
        old = await make_session(client, profile_id, title)
        at = now - timedelta(days=days, hours=2)
        set_session(
            server, old, status=status, cost_usd=cost, turns=turns, created_at=at, updated_at=at
        )
    sid = await finished_session(server, client, cwd, profile_id)
    set_session(
        server, sid, created_at=now - timedelta(minutes=26), updated_at=now - timedelta(minutes=20)
    )

    # A live session with a real approval waiting, from the fake claude.
    live_profile = await make_profile(
        client, cwd, name="app (fake CLI)", command=fake_claude["command"], env=fake_claude["env"]
    )
    edit = {
        "tool": "Edit",
        "input": {
            "file_path": "src/auth.py",
            "old_string": "datetime.now() + timedelta(minutes=30)",
            "new_string": "clock.now() + timedelta(minutes=TOKEN_MINUTES)",
        },
        "permission": True,
        "reason": "Edits need your approval in the default mode",
    }
    intro = {"text": "The expiry should come from the settings too. Here is the edit:"}
    write_scenario(fake_claude["scenario"], [[{"thinking": "Find the constant."}, intro, edit]])
    (cwd / "src" / "auth.py").write_text(AUTH_AFTER)
    waiting = await make_session(client, live_profile, "Read the token lifetime from settings")

    context = await browser.new_context(viewport=SIZE, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await expect(page.locator(".turn-end")).to_be_visible()
        # The edit's diff open, the failed test output folded to its summary line.
        await page.locator(".tool-call[data-tcid=t3]").evaluate("el => el.open = true")
        await page.locator(".tool-result[data-tcid=t2]").evaluate("el => el.open = false")
        await page.locator("#transcript").evaluate("el => el.scrollTop = el.scrollHeight")
        await page.screenshot(path=str(out / "chat.png"))

        await page.goto(f"{server.url}/sessions/{waiting}")
        await send(client, waiting, "Take the token lifetime from settings.TOKEN_MINUTES")
        card = page.locator('.perm[data-status="pending"]')
        await expect(card.locator(".diff .add")).to_have_count(1)
        await expect(card.locator(".perm-wait")).to_have_text(re.compile(r"waiting"))
        await page.locator("#composer-text").fill("also update the docs")
        await page.screenshot(path=str(out / "permission.png"))

        await page.goto(f"{server.url}/sessions")
        await expect(page.locator(".history-pending")).to_have_count(1)
        await page.screenshot(path=str(out / "sessions.png"))

        # Screenshots of the app itself serve as the images a user would attach.
        shots = [
            await page.screenshot(clip={"x": x, "y": 0, "width": 600, "height": 400})
            for x in (0, 300, 600)
        ]
        reply = {"text": IMAGE_REPLY}
        write_scenario(fake_claude["scenario"], [[reply]], rewind=rewind_answer(cwd))
        pictured = await make_session(client, live_profile, "Tidy the sessions list")
        image = {"media_type": "image/png", "data": base64.b64encode(shots[0]).decode()}
        r = await client.post(
            f"/api/sessions/{pictured}/messages",
            json={
                "text": "The day headings crowd the rows. Can you space them out?",
                "images": [image],
            },
        )
        assert r.status_code == 202, r.text
        await page.goto(f"{server.url}/sessions/{pictured}")
        await expect(page.locator(".turn-end")).to_be_visible()
        await page.locator("#attach-input").set_input_files(
            files=[
                {"name": f"screen-{i}.png", "mimeType": "image/png", "buffer": shot}
                for i, shot in enumerate(shots[1:], 1)
            ]
        )
        await expect(page.locator("#attach-list img")).to_have_count(2)
        await page.locator("#composer-text").fill("Same on the search page:")
        await page.screenshot(path=str(out / "images.png"))

        # The rewind dialog over the finished conversation, its message now rewindable.
        rewound = await make_session(client, live_profile, "Make the login test deterministic")
        events = finished_conversation(cwd)
        events[0][2]["message_id"] = "demo-message-1"
        write_events(server, rewound, events)
        set_session(server, rewound, backend_session_id="demo-rewind-session", turns=1)
        await page.goto(f"{server.url}/sessions/{rewound}")
        await page.locator(".rewind-act").first.click()
        dialog = page.locator("#rewind-dialog")
        await expect(dialog.locator("#rewind-files li")).to_have_count(2)
        await page.screenshot(path=str(out / "rewind.png"))
    finally:
        await context.close()


async def test_screenshots_of_questions_plans_subagents_queue_and_model(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    fake_claude: dict[str, Any],
    shots: tuple[Path, Path],
) -> None:
    out, cwd = shots
    fake = {"command": fake_claude["command"], "env": fake_claude["env"]}
    live_profile = await make_profile(client, cwd, name="app (fake CLI)", **fake)

    async def live_session(title: str, steps: list[dict[str, Any]], **extra: Any) -> str:
        # Each CLI reads the scenario when it starts: one per session, written just before.
        write_scenario(fake_claude["scenario"], [steps])
        profile = live_profile
        if extra:
            profile = await make_profile(client, cwd, name="app (fake CLI)", **fake, **extra)
        return await make_session(client, profile, title)

    context = await browser.new_context(viewport=SIZE, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    await context.add_init_script(CSP_PROBE)
    page = await context.new_page()
    card = page.locator('.perm[data-status="pending"]')
    try:
        ask = {"tool": "AskUserQuestion", "input": QUESTION, "permission": True}
        sid = await live_session("Token lifetime from settings", [ask])
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await send(client, sid, "Make the token lifetime configurable.")
        await card.get_by_role("radio", name=re.compile("^settings.py")).check()
        await card.get_by_role("checkbox", name=re.compile("^Expiry")).check()
        await card.get_by_label(re.compile("Other: your own words")).fill("Clock skew")
        await card.evaluate("el => el.scrollIntoView({block: 'start'})")
        await page.screenshot(path=str(out / "question.png"))

        exit_plan = {"tool": "ExitPlanMode", "input": {"plan": PLAN_TEXT}, "permission": True}
        sid = await live_session("Plan the settings change", [exit_plan], permission_mode="plan")
        await page.goto(f"{server.url}/sessions/{sid}")
        await send(client, sid, "Plan how to read the token lifetime from settings.")
        await expect(card.locator(".plan-md .md-h2")).to_be_visible()
        await card.locator("textarea[name=message]").fill("Also mention the docs.")
        await page.locator("#transcript").evaluate("el => el.scrollTop = el.scrollHeight")
        await page.screenshot(path=str(out / "plan.png"))

        profile_id = await make_profile(client, cwd, name="app")
        sid = await make_session(client, profile_id, "Other wall clock reads")
        write_events(server, sid, subagent_conversation())
        await page.goto(f"{server.url}/sessions/{sid}")
        group = page.locator(".subagent")
        await expect(group).to_have_attribute("data-status", "completed")
        await group.locator("summary").first.click()
        await page.screenshot(path=str(out / "subagent.png"))

        sid = await live_session("Rename the settings module", [{"sleep": 30}])
        await page.goto(f"{server.url}/sessions/{sid}")
        await send(client, sid, "Rename settings.py to config.py and fix the imports.")
        for text in ("Then run the whole test suite.", "And update the README."):
            r = await client.post(f"/api/sessions/{sid}/messages", json={"text": text})
            assert r.json()["queued"] is True
        waiting = page.locator('.msg.user[data-queue="waiting"]')
        await expect(waiting).to_have_count(2)
        await waiting.nth(1).get_by_role("button", name="Edit").click()
        await (
            waiting.nth(1)
            .get_by_label("Edit the waiting message")
            .fill("And update the README and the user guide.")
        )
        await page.screenshot(path=str(out / "queue.png"))
        await client.post(f"/api/sessions/{sid}/interrupt")

        sid = await make_session(client, profile_id, "Cheaper model for the docs")
        write_events(server, sid, finished_with_models())
        await page.goto(f"{server.url}/sessions/{sid}")
        await page.get_by_label("Model", exact=True).select_option("haiku")
        await expect(page.locator(".model-line")).to_have_text("Model switched to haiku")
        await page.get_by_label("Model", exact=True).focus()
        await page.screenshot(path=str(out / "model.png"))
    finally:
        await context.close()


REDATE = text("UPDATE event SET created_at = :at WHERE session_id = :s AND seq = :q")


def usage_history(server: LiveServer, cwd: Path) -> None:
    """Two weeks of turns in three profiles, one of them on a backend with no cost."""
    engine = server.app.state.angelia.engine
    events = server.app.state.angelia.events
    today = datetime.now().date()
    plan = (
        ("app", "claude", "claude-sonnet-5-5", (0.42, 0.0, 1.1, 0.65, 0.2, 0.0, 0.9)),
        ("docs", "claude", "claude-haiku-5-5", (0.05, 0.12, 0.0, 0.08, 0.1, 0.04, 0.0)),
        ("experiments", "gemini", "gemini-2.5-pro", (None, None, 0.0, None, None, 0.0, None)),
    )
    for name, backend, model, costs in plan:
        data = ProfileCreate(name=name, backend=backend, cwd=str(cwd), model=model)
        profile_id = store.create_profile(engine, data=data).id
        sid = store.create_session(engine, profile_id=profile_id, title=f"{name} work").id
        for week in (0, 7):
            for day, cost in enumerate(costs):
                if cost == 0.0:
                    continue
                n = 1 + day % 3
                usage = {
                    "input_tokens": 9000 * n,
                    "output_tokens": 1500 * n,
                    "cache_read_input_tokens": 40000 * n,
                }
                payload = {"stop_reason": "end_turn", "cost_usd": cost, "usage": usage}
                seq = events.append(sid, "turn_end", payload | {"model": model}).seq
                events.flush_sync()
                at = today - timedelta(days=week + day)
                with engine.begin() as conn:
                    conn.execute(
                        text(
                            "UPDATE event SET created_at = :at WHERE session_id = :s AND seq = :q"
                        ),
                        {"at": f"{at.isoformat()} 15:00:00", "s": sid, "q": seq},
                    )


async def test_screenshot_of_the_usage_page(
    browser: Browser, server: LiveServer, shots: tuple[Path, Path]
) -> None:
    out, cwd = shots
    usage_history(server, cwd)
    # Tall enough for both charts: the page scrolls inside its main column.
    context = await browser.new_context(viewport={"width": 1200, "height": 1640})
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/usage?days=30&token={TOKEN}")
        await expect(page.locator("#cost-chart rect.bar").first).to_be_visible()
        await page.screenshot(path=str(out / "usage.png"))
    finally:
        await context.close()


async def test_screenshot_of_the_changes_tab(
    browser: Browser, server: LiveServer, client: httpx.AsyncClient, shots: tuple[Path, Path]
) -> None:
    out, cwd = shots
    profile_id = await make_profile(client, cwd, name="app")
    sid = await make_session(client, profile_id, "Read the token lifetime from settings")
    (cwd / "src").mkdir(exist_ok=True)
    before = "from datetime import datetime, timedelta\n\n\ndef expiry():\n"
    before += "    return datetime.now() + timedelta(minutes=30)\n"
    after = before.replace("datetime.now() + timedelta(minutes=30)", "clock.now() + TOKEN_TTL")
    after = after.replace(
        "timedelta\n\n", "timedelta\n\nfrom app.settings import TOKEN_TTL, clock\n\n"
    )
    (cwd / "src" / "auth.py").write_text(after)
    test = "from src.auth import expiry\n\n\ndef test_expiry_uses_the_setting():\n"
    test += "    assert expiry() > clock.now()\n"
    (cwd / "tests").mkdir(exist_ok=True)
    (cwd / "tests" / "test_auth.py").write_text(test)
    steps = [
        ("t1", "Edit", {"file_path": "src/auth.py", "old_string": before, "new_string": after}),
        ("t2", "Write", {"file_path": "tests/test_auth.py", "content": test}),
    ]
    events = server.app.state.angelia.events
    for call_id, tool, data in steps:
        call = {"tool_call_id": call_id, "tool": tool, "title": tool, "input": data}
        events.append(sid, "tool_call", call)
        output = "File created successfully" if tool == "Write" else "ok"
        events.append(sid, "tool_result", {"tool_call_id": call_id, "output": output})
    events.flush_sync()
    context = await browser.new_context(viewport=SIZE, color_scheme="light")
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}/changes?token={TOKEN}")
        await expect(page.locator("#changes-files li")).to_have_count(2)
        await page.screenshot(path=str(out / "changes.png"))
    finally:
        await context.close()


async def test_screenshot_of_a_followed_terminal_session(
    browser: Browser, server: LiveServer, client: httpx.AsyncClient, shots: tuple[Path, Path]
) -> None:
    out, cwd = shots
    await make_profile(client, cwd, name="app")
    fixture = FIXTURES / "-srv-demo-shop" / f"{SHOP}.jsonl"
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-src-app"
    folder.mkdir(parents=True)
    text_ = fixture.read_text().replace("/srv/demo/shop", str(cwd))
    (folder / fixture.name).write_text(text_)
    r = await client.post(f"/sessions/import/claude/{SHOP}", follow_redirects=False)
    assert r.status_code == 303, r.text
    context = await browser.new_context(viewport=SIZE, color_scheme="light")
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}{r.headers['location']}?token={TOKEN}")
        await expect(page.locator("#follow-banner")).to_be_visible()
        await page.screenshot(path=str(out / "terminal.png"))
    finally:
        await context.close()
