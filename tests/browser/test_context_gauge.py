"""The context gauge in Chromium: its colour at each threshold, the numbers on hover and
on keyboard focus, "unknown" where nothing was reported, live updates on the session page,
and a phone-wide sessions list."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, expect

from tests.api.test_context_gauge import CALL_USAGE, USED
from tests.browser.conftest import Browsing, settled
from tests.browser.test_screenshots import SIZE, shots  # noqa: F401
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events

pytestmark = pytest.mark.browser

WINDOW = 200_000
# (title, used) -> the level the gauge must show; thresholds at 60 % and 80 %.
SEEDED = {
    "calm": (119_999, "green"),
    "filling": (120_000, "amber"),
    "nearly full": (160_000, "red"),
    "unreported": (None, "unknown"),
}
# The light theme's --green, --amber-border and --red-solid.
COLOURS = {"green": "rgb(26, 127, 55)", "amber": "rgb(154, 103, 0)", "red": "rgb(207, 34, 46)"}


async def seed(browsing: Browsing, client: httpx.AsyncClient, project_dir: Path) -> dict[str, str]:
    """One session per entry of SEEDED, each with its stored usage; title -> id."""
    body = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile_id = (await client.post("/api/profiles", json=body)).json()["id"]
    events = browsing.server.app.state.angelia.events
    ids: dict[str, str] = {}
    for title, (used, _level) in SEEDED.items():
        r = await client.post("/api/sessions", json={"profile_id": profile_id, "title": title})
        ids[title] = sid = r.json()["id"]
        if used is not None:
            events.append(sid, "usage", {"used": 1, "size": WINDOW, "cost_usd": None})
            events.append(sid, "usage", {"used": used, "size": WINDOW, "cost_usd": None})
    await events.flush()
    return ids


async def colour(gauge: Locator) -> str:
    return str(await gauge.evaluate("el => getComputedStyle(el).borderTopColor"))


async def test_levels_colours_and_numbers_on_hover_and_focus(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path
) -> None:
    ids = await seed(browsing, client, project_dir)
    page = browsing.page
    await page.emulate_media(color_scheme="light")
    await browsing.sign_in("/sessions")
    for title, (used, level) in SEEDED.items():
        gauge = page.locator(f'[data-gauge-of="{ids[title]}"] .ctx-gauge__badge')
        await expect(gauge).to_have_attribute("data-level", level)
        numbers = gauge.locator(".ctx-gauge__numbers")
        await expect(numbers).to_be_hidden()
        if used is None:
            await expect(gauge.locator(".ctx-gauge__short")).to_have_text("unknown")
            await expect(gauge.locator("meter")).to_be_hidden()
        else:
            assert await colour(gauge) == COLOURS[level], (title, level)
            meter = gauge.locator("meter")
            await expect(meter).to_be_visible()
            assert await meter.evaluate("el => el.value") == round(used * 100 / WINDOW)
    shades = {
        await colour(page.locator(f'[data-gauge-of="{ids[t]}"] .ctx-gauge__badge')) for t in ids
    }
    assert len(shades) == 4, shades  # unknown is neither green, amber nor red

    red = page.locator(f'[data-gauge-of="{ids["nearly full"]}"] .ctx-gauge__badge')
    await red.hover()
    await expect(red.locator(".ctx-gauge__numbers")).to_be_visible()
    await expect(red.locator(".ctx-gauge__numbers")).to_have_text(
        "Context: 160.0k of 200.0k tokens used (80%)"
    )
    await page.mouse.move(0, 0)
    await expect(red.locator(".ctx-gauge__numbers")).to_be_hidden()
    unknown = page.locator(f'[data-gauge-of="{ids["unreported"]}"] .ctx-gauge__badge')
    await unknown.focus()
    await expect(unknown.locator(".ctx-gauge__numbers")).to_be_visible()
    await expect(unknown.locator(".ctx-gauge__numbers")).to_have_text(
        "Context: unknown (the agent has not reported it)"
    )
    # Keyboard users reach each gauge with Tab.
    await page.keyboard.press("Shift+Tab")
    await page.keyboard.press("Tab")
    await expect(unknown).to_be_focused()
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_the_session_header_follows_new_figures_live(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path
) -> None:
    ids = await seed(browsing, client, project_dir)
    sid = ids["unreported"]
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    gauge = page.locator("#session-head .ctx-gauge__badge")
    await expect(gauge).to_have_attribute("data-level", "unknown")
    # Nothing was ever said in it: nothing to compact, so no button.
    await expect(page.get_by_role("button", name="Compact")).to_have_count(0)
    events = browsing.server.app.state.angelia.events
    events.append(sid, "usage", {"used": 170_000, "size": WINDOW, "cost_usd": None})
    await events.flush()
    await expect(gauge).to_have_attribute("data-level", "red")
    await expect(gauge.locator(".ctx-gauge__short")).to_have_text("85%")
    await gauge.focus()
    await expect(gauge.locator(".ctx-gauge__numbers")).to_have_text(
        "Context: 170.0k of 200.0k tokens used (85%)"
    )
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []


async def test_a_phone_wide_list_keeps_the_gauge_inside_the_screen(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path
) -> None:
    ids = await seed(browsing, client, project_dir)
    page = browsing.page
    await page.set_viewport_size({"width": 360, "height": 740})
    await browsing.sign_in("/sessions")
    gauge = page.locator(f'[data-gauge-of="{ids["filling"]}"] .ctx-gauge__badge')
    await expect(gauge).to_be_visible()
    await settled(page)
    box = await gauge.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360, box
    await gauge.focus()
    await settled(page)
    tip = await gauge.locator(".ctx-gauge__numbers").bounding_box()
    assert tip is not None and tip["x"] >= 0 and tip["x"] + tip["width"] <= 360, tip
    assert await page.evaluate("document.documentElement.scrollWidth") <= 360


async def test_compact_during_a_turn_says_why_nothing_happened(
    browsing: Browsing, client: httpx.AsyncClient, fake_claude: dict[str, Any], project_dir: Path
) -> None:
    turns = [[{"text": "hi", "usage": CALL_USAGE}], [{"sleep": 30}]]
    write_scenario(fake_claude["scenario"], turns, context_window=WINDOW)
    profile = {"name": "p", "backend": "claude", "cwd": str(project_dir)}
    profile |= {"command": fake_claude["command"], "env": fake_claude["env"]}
    profile_id = (await client.post("/api/profiles", json=profile)).json()["id"]
    sid = (await client.post("/api/sessions", json={"profile_id": profile_id})).json()["id"]
    await send(client, sid, "first")
    await wait_for_events(client, sid, count("turn_end"))
    await send(client, sid, "take your time")
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await page.get_by_role("button", name="Session actions").click()
    await page.get_by_role("button", name="Compact").click()
    problem = page.locator("#compact-error")
    await expect(problem).to_be_visible()
    await expect(problem).to_contain_text("compact once its turn has ended")
    await expect(page.locator(".event.compacted")).to_have_count(0)
    await client.post(f"/api/sessions/{sid}/interrupt")
    assert browsing.log.page_errors == []
    assert await browsing.csp_violations() == []


@pytest.mark.skipif(os.environ.get("ANGELIA_SCREENSHOTS") != "1", reason="ANGELIA_SCREENSHOTS=1")
async def test_screenshot_of_the_gauge_and_a_compaction(
    browsing: Browsing,
    client: httpx.AsyncClient,
    fake_claude: dict[str, Any],
    shots: tuple[Path, Path],  # noqa: F811
) -> None:
    out, cwd = shots
    answer = "The login test reads the wall clock; I'll inject a clock so it can be frozen."
    turns = [
        [{"text": answer, "usage": CALL_USAGE}],
        [{"compact": {"pre_tokens": USED, "post_tokens": 18_240}}],
    ]
    write_scenario(fake_claude["scenario"], turns, context_window=WINDOW)
    profile = {"name": "app", "backend": "claude", "cwd": str(cwd)}
    profile |= {"command": fake_claude["command"], "env": fake_claude["env"]}
    profile_id = (await client.post("/api/profiles", json=profile)).json()["id"]
    body = {"profile_id": profile_id, "title": "Fix the flaky login test"}
    sid = (await client.post("/api/sessions", json=body)).json()["id"]
    await send(client, sid, "the login test fails on CI, can you look?")
    await wait_for_events(client, sid, count("turn_end"))
    page = browsing.page
    await page.set_viewport_size(SIZE)
    await browsing.sign_in(f"/sessions/{sid}")
    gauge = page.locator("#session-head .ctx-gauge__badge")
    await expect(gauge).to_have_attribute("data-level", "amber")
    await page.get_by_role("button", name="Session actions").click()
    await page.get_by_role("button", name="Compact").click()
    folded = page.locator(".event.compacted")
    await expect(folded).to_have_count(1)
    await folded.locator("summary").click()
    await gauge.hover()
    await expect(gauge.locator(".ctx-gauge__numbers")).to_be_visible()
    await page.screenshot(path=str(out / "context.png"))
