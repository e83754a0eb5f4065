"""The usage page in Chromium: the charts draw, in both themes, and an empty period."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browsing, settled
from tests.web.usage.test_pages_usage import seed

pytestmark = pytest.mark.browser


async def fills(browsing: Browsing) -> list[str]:
    bars = browsing.page.locator("#cost-chart rect.bar")
    return [await b.evaluate("el => getComputedStyle(el).fill") for b in await bars.all()]


async def test_the_charts_draw_with_data_in_light_and_dark(
    browsing: Browsing, project_dir: Path
) -> None:
    seed(browsing.server, project_dir)
    page = browsing.page
    await page.emulate_media(color_scheme="light")
    await browsing.sign_in("/usage")
    cost = page.locator("#cost-chart")
    await expect(cost).to_be_visible()
    await expect(page.locator("#cost-chart rect.bar")).to_have_count(2)
    await settled(page)
    for bar in await page.locator("#cost-chart rect.bar, #tokens-chart rect.bar").all():
        box = await bar.bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0
    await expect(page.locator("#tokens-chart rect.bar")).to_have_count(9)
    light = await fills(browsing)
    assert all(f not in ("", "none", "rgb(0, 0, 0)") for f in light), light
    text_colour = await page.locator("#cost-chart text.tick").first.evaluate(
        "el => getComputedStyle(el).fill"
    )
    await page.emulate_media(color_scheme="dark")
    dark = await fills(browsing)
    assert dark != light, (light, dark)
    dark_text = await page.locator("#cost-chart text.tick").first.evaluate(
        "el => getComputedStyle(el).fill"
    )
    assert dark_text != text_colour
    # A bar says what it is when pointed at.
    await expect(page.locator("#cost-chart rect.bar title").first).to_contain_text("$0.")
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    assert await browsing.csp_violations() == []


async def test_an_empty_period_draws_no_chart(browsing: Browsing) -> None:
    page = browsing.page
    await browsing.sign_in("/usage?days=7")
    await expect(page.locator("#usage-empty")).to_be_visible()
    await expect(page.locator("svg.chart-svg")).to_have_count(0)
    await expect(page.locator("#by-day tbody")).to_contain_text("No turns.")
    await page.get_by_role("button", name="all time").click()
    await expect(page.locator("button[value=all][aria-pressed=true]")).to_be_visible()
    await expect(page.locator("#usage-empty")).to_be_visible()
