"""The model picker in a real browser: a choice applies at once, the transcript and the
header follow, and a refusal shows under the picker, which goes back to the model in use."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.browser.test_approvals import type_and_send

pytestmark = pytest.mark.browser


async def test_switch_the_model_from_the_header(
    browsing: Browsing, client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    picker = page.get_by_label("Model", exact=True)
    await expect(picker).to_have_value("default")
    # With scripts the choice applies at once; the Switch button is for pages without.
    await expect(page.locator("#model-form .model-apply")).to_be_hidden()

    await picker.select_option("haiku")
    await expect(page.locator(".model-line")).to_have_text("Model switched to haiku")
    await expect(page.locator("#session-model")).to_have_text("haiku")
    assert (await client.get(f"/api/sessions/{sid}")).json()["model"] == "haiku"
    await page.reload()
    await expect(picker).to_have_value("haiku")

    # The running fake CLI cannot switch: the page says why and shows the model in use.
    await type_and_send(page, "hello")
    await expect(page.locator(".msg.assistant .md")).to_have_text("hello from fake")
    await picker.select_option("opus")
    error = page.locator("#model-error")
    await expect(error).to_be_visible()
    await expect(error).to_have_text(re.compile("refused model 'opus'"))
    await expect(picker).to_have_value("haiku")
    assert (await client.get(f"/api/sessions/{sid}")).json()["model"] == "haiku"
    assert browsing.log.page_errors == [] and await browsing.csp_violations() == []
