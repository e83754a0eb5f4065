"""The API explorer at /docs works offline and under the app's CSP."""

from __future__ import annotations

import pytest

from tests.browser.conftest import Browsing

pytestmark = pytest.mark.browser


async def test_docs_page_lists_the_api(browsing: Browsing) -> None:
    await browsing.sign_in("/docs")
    page = browsing.page
    await page.wait_for_selector(".opblock-summary-path", timeout=15_000)
    paths = await page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/sessions/{session_id}/messages" in p for p in paths), paths[:5]
    assert await browsing.csp_violations() == []
    assert browsing.log.page_errors == []
