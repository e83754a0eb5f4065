"""The chat and approval pages in a real browser: streaming, permission cards, keyboard."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from tests.api.test_chat import fake_log, make_session
from tests.browser.conftest import Browsing, settled
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events

pytestmark = pytest.mark.browser


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}, "permission": True}


def answers(fake: dict[str, Any]) -> list[dict[str, Any]]:
    """The permission answers the fake claude read on its stdin, in order."""
    return [
        e["stdin"]["response"]["response"]
        for e in fake_log(fake)
        if e.get("stdin", {}).get("type") == "control_response"
    ]


async def type_and_send(page: Page, text: str) -> None:
    # The composer's Enter handler comes with the page's deferred scripts; on a loaded
    # machine the box can take keys before they have run, and Enter would add a line.
    await settled(page)
    box = page.locator("#composer-text")
    await box.click()
    await page.keyboard.type(text)
    await page.keyboard.press("Enter")
    await expect(box).to_have_value("")


def pending_card(page: Page) -> Locator:
    return page.locator('.perm[data-status="pending"]')


async def focus_page_body(page: Page) -> None:
    await page.evaluate("document.activeElement && document.activeElement.blur()")


async def test_send_with_enter_streams_and_survives_reload(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[{"text": "hello from the fake", "chunks": 4}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in()
    await page.click(f"nav a[href='/sessions/{sid}']")
    await expect(page.locator("#transcript")).to_be_visible()

    await type_and_send(page, "say hi")
    answer = page.locator(".msg.assistant .md")
    await expect(answer).to_have_text("hello from the fake")
    await expect(page.locator(".msg.user .bubble")).to_have_text("say hi")
    await expect(page.locator(".turn-end")).to_have_count(1)

    await page.reload()
    await expect(answer).to_have_text("hello from the fake")
    await expect(page.locator(".msg.user .bubble")).to_have_text(["say hi"])
    await expect(page).to_have_title("say hi · Angelia")


async def test_prompt_survives_reload_and_allow_once_runs_the_tool(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    write_scenario(fake_claude["scenario"], [[bash("touch x"), {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "run touch")

    card = pending_card(page)
    await expect(card.locator("pre.cmd")).to_have_text("touch x")
    badge = page.locator("#pending-badge .badge")
    await expect(badge).to_have_attribute("data-count", "1")
    await expect(page).to_have_title(re.compile(r"^\(1\) "))

    await page.reload()
    await expect(card.locator("pre.cmd")).to_have_text("touch x")
    await expect(card.locator(".perm-wait")).to_have_text(re.compile(r"^waiting \d+:\d\d$"))
    await expect(badge).to_have_attribute("data-count", "1")
    await expect(page).to_have_title("(1) run touch · Angelia")
    await expect(page.locator("#composer-hint")).to_be_visible()
    # A message sent now waits for the answer instead of ending the turn.
    await type_and_send(page, "and the docs")
    queued = page.locator(".msg.user[data-queue]")
    await expect(queued.locator(".queue-label")).to_have_text("waits for your approval")

    await card.get_by_role("button", name=re.compile("^Allow once")).click()
    decided = page.locator(".perm.decided")
    await expect(decided.locator(".outcome")).to_have_text("Allowed once by you")
    await expect(pending_card(page)).to_have_count(0)
    await expect(page.locator(".tool-result pre.output")).to_have_text("ran")
    await expect(page.locator(".tool-call")).to_have_attribute("data-state", "done")
    await expect(page.locator(".msg.assistant .md")).to_have_text(["done", "echo: and the docs"])
    await expect(queued).to_have_attribute("data-queue", "sent")
    await expect(queued.locator(".queue-label")).to_have_count(0)
    await expect(page.locator("#pending-badge [data-count]")).to_have_attribute("data-count", "0")
    await expect(badge).to_have_count(0)
    await expect(page).to_have_title("run touch · Angelia")
    await expect(page.locator("#composer-hint")).to_be_hidden()
    assert answers(fake_claude)[0]["behavior"] == "allow"


async def test_keyboard_alone_answers_prompts(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    steps = [bash("echo one"), bash("echo two"), bash("echo three"), {"text": "finished"}]
    write_scenario(fake_claude["scenario"], [steps])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await send(client, sid, "go")

    # Enter with nothing focused allows the oldest pending request.
    card = pending_card(page)
    await expect(card.locator("pre.cmd")).to_have_text("echo one")
    await expect(card.locator("kbd.key-hint").first).to_be_visible()
    await focus_page_body(page)
    await page.keyboard.press("Enter")

    # Tab reaches the next card itself (it is focusable); Enter there allows it.
    await expect(card.locator("pre.cmd")).to_have_text("echo two")
    for _ in range(80):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.matches('.perm[data-status=pending]')"):
            break
    else:
        pytest.fail("Tab never reached the pending card")
    await page.keyboard.press("Enter")

    # Escape denies.
    await expect(card.locator("pre.cmd")).to_have_text("echo three")
    await focus_page_body(page)
    await page.keyboard.press("Escape")
    await expect(page.locator(".msg.assistant .md")).to_have_text("finished")
    outcomes = page.locator(".perm.decided .outcome")
    await expect(outcomes).to_have_text(
        ["Allowed once by you", "Allowed once by you", "Denied by you"]
    )
    assert [a["behavior"] for a in answers(fake_claude)] == ["allow", "allow", "deny"]


async def test_deny_message_reaches_the_agent(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    steps = [bash("rm -rf /tmp/cache"), bash("drop table users"), {"text": "ok"}]
    write_scenario(fake_claude["scenario"], [steps])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await send(client, sid, "clean up")

    card = pending_card(page)
    await expect(card.locator("pre.cmd")).to_have_text("rm -rf /tmp/cache")
    await card.get_by_label(re.compile("Tell the agent why")).fill("keep the cache")
    await card.get_by_role("button", name=re.compile("^Deny")).first.click()
    await expect(page.locator(".perm.decided .outcome")).to_have_text("Denied by you")

    # Enter in the message field denies too (the form's default button would allow).
    await expect(card.locator("pre.cmd")).to_have_text("drop table users")
    field = card.get_by_label(re.compile("Tell the agent why"))
    await field.fill("never touch the users table")
    await field.press("Enter")
    await expect(page.locator(".msg.assistant .md")).to_have_text("ok")

    sent = answers(fake_claude)
    assert sent == [
        {"behavior": "deny", "message": "keep the cache"},
        {"behavior": "deny", "message": "never touch the users table"},
    ]
    results = page.locator(".tool-result pre.output")
    await expect(results).to_have_text(["keep the cache", "never touch the users table"])
    await expect(page.locator(".perm.decided .perm-line .perm-reason").first).to_have_text(
        "Message: keep the cache"
    )


async def test_pages_run_without_console_errors_or_csp_violations(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    (project_dir / "app.py").write_text("x = 1\n")
    edit = {
        "tool": "Edit",
        "input": {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 2"},
        "permission": True,
    }
    reply = "Done. See:\n\n```python\nprint('<b>hi</b>')\n```"
    write_scenario(fake_claude["scenario"], [[{"thinking": "hmm"}, edit, {"text": reply}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "change x")

    card = pending_card(page)
    await expect(card.locator(".diff .add")).to_have_text("+x = 2")
    await expect(card.locator(".diff .del")).to_have_text("-x = 1")
    # The mode switch applies in place; the new mode stays selected.
    await page.select_option("#mode-select", "acceptEdits")
    await page.click("#mode-form button[type=submit]")
    await expect(page.locator("#mode-select")).to_have_value("acceptEdits")
    await pending_card(page).get_by_role("button", name=re.compile("^Allow once")).click()
    await expect(page.locator(".md .code button.copy")).to_have_count(1)
    await expect(page.locator(".md code.language-python")).to_contain_text("<b>hi</b>")
    await wait_for_events(client, sid, count("turn_end"))

    # Bypass asks for the confirmation box before it turns the header red.
    await page.select_option("#mode-select", "bypassPermissions")
    confirm = page.locator("#mode-confirm input")
    await expect(confirm).to_be_visible()
    await page.click("#mode-form button[type=submit]")
    await expect(page.locator("#mode-error")).to_contain_text("confirm")
    await page.locator("#mode-confirm input").check()
    await page.click("#mode-form button[type=submit]")
    await expect(page.locator("#session-head")).to_have_class(re.compile(r"\bis-bypass\b"))
    await expect(page.locator("#bypass-flag")).to_be_visible()
    # A switch made elsewhere (the API, another tab) shows up live.
    r = await client.post(f"/api/sessions/{sid}/mode", json={"mode": "plan"})
    assert r.status_code == 200, r.text
    await expect(page.locator("#mode-select")).to_have_value("plan")
    await expect(page.locator("#session-head")).not_to_have_class(re.compile(r"\bis-bypass\b"))
    await expect(page.locator("#bypass-flag")).to_be_hidden()
    assert await browsing.csp_violations() == []

    for path in ("/permissions", f"/permissions?session={sid}&from=2020-01-01", "/"):
        await page.goto(browsing.server.url + path)
        await expect(page.locator("main h1")).to_be_visible()
    await page.goto(browsing.server.url + "/permissions")
    await expect(page.locator("table.audit tbody tr")).to_have_count(1)
    await page.click("table.audit tbody a")
    await expect(page.locator(".perm.decided")).to_have_count(1)
    await page.goto(browsing.server.url + "/")
    await page.click("#profiles a")
    await page.fill("input[name=rule]", "Bash(npm test:*)")
    await page.click("form.rule-form button[type=submit]")
    await expect(page.locator("table.rules tbody tr")).to_have_count(1)

    assert browsing.log.console_errors == []
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []
