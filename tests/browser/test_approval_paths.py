"""The path an approval card names: "outside the allowed folders" only when it is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.browser.test_approvals import pending_card, type_and_send
from tests.conftest import write_scenario

pytestmark = pytest.mark.browser


def touch(path: str) -> dict[str, Any]:
    """A Bash call whose request names ``path``, as Claude Code does for a file it creates."""
    return {
        "tool": "Bash",
        "input": {"command": f"touch {path}"},
        "permission": True,
        "blocked_path": path,
    }


async def test_the_card_says_outside_only_for_a_path_outside_the_folder(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    tmp_path: Path,
    fake_claude: dict[str, Any],
) -> None:
    inside = str(project_dir / "made_by_fake.txt")
    # A sibling whose name starts like the project's is outside all the same.
    outside = str(tmp_path / f"{project_dir.name}-other" / "notes.txt")
    write_scenario(fake_claude["scenario"], [[touch(inside), touch(outside), {"text": "done"}]])
    sid = await make_session(client, project_dir, fake_claude)
    page = browsing.page
    await browsing.sign_in(f"/sessions/{sid}")
    await type_and_send(page, "make the files")

    path_line = pending_card(page).locator(".perm-path")
    await expect(path_line).to_have_text(f"Path: {inside}")
    await page.reload()  # rendered from the stored event, not only as it streamed in
    await expect(path_line).to_have_text(f"Path: {inside}")
    await pending_card(page).get_by_role("button", name=re.compile("^Allow once")).click()

    await expect(path_line).to_have_text(f"Outside the allowed folders: {outside}")
    await page.reload()
    await expect(path_line).to_have_text(f"Outside the allowed folders: {outside}")
