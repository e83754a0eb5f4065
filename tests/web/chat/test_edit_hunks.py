"""An Edit's hunk header gives the line in the file, or no number at all, never the
snippet's own ``@@ -1 +1 @@``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat import make_session
from tests.conftest import write_scenario
from tests.helpers import count, send, wait_for_events
from tests.web.history.test_pages_permissions import soup_of, texts


def edit_of(path: Path, old: str, new: str) -> dict[str, Any]:
    tool_input = {"file_path": str(path), "old_string": old, "new_string": new}
    return {"tool": "Edit", "input": tool_input, "permission": True}


async def pending_card_hunks(
    client: httpx.AsyncClient, project_dir: Path, fake: dict[str, Any], edit: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """(the pending card's hunk headers, the tool call's) for a session asking ``edit``."""
    write_scenario(fake["scenario"], [[edit, {"text": "edited"}]])
    sid = await make_session(client, project_dir, fake)
    await send(client, sid, "edit it")
    await wait_for_events(client, sid, count("permission_request"))
    page = soup_of(await client.get(f"/sessions/{sid}"))
    card = page.select_one(".perm.pending")
    assert card is not None
    return texts(card, ".diff .hunk"), texts(page, ".tool-call .diff .hunk")


@pytest.mark.parametrize(
    ("old", "header"),
    [("x = 1", "@@ -2 +2 @@"), ("z = 9", "@@")],
    ids=["found-on-line-2", "not-in-the-file"],
)
async def test_the_edit_card_numbers_the_hunk_by_the_file(
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    old: str,
    header: str,
) -> None:
    source = project_dir / "app.py"
    source.write_text("a = 0\nx = 1\ny = 2\n")
    card, tool_call = await pending_card_hunks(
        client, project_dir, fake_claude, edit_of(source, old, "x = 3")
    )
    assert card == [header]
    # The transcript's card has no file to look in: no numbers there.
    assert tool_call and all(h == "@@" for h in tool_call), tool_call
