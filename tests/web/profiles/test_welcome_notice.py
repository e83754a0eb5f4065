"""The welcome page's list of agents says that Gemini CLI no longer serves most personal
accounts and that an API key still works, whether Gemini is installed or not."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.services.profiles.test_doctor_notice import GEMINI_NOTE
from tests.web.profiles.test_pages_welcome import machine_facts, only_cli_on_path


async def test_an_installed_gemini_is_offered_with_the_note(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_cli_on_path(tmp_path, monkeypatch, "gemini", "0.61.0")
    page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
    option = page.select_one("input[name=backend][value=gemini]")
    assert option is not None and option.parent is not None
    note = option.parent.select_one(".backend-notice")
    assert note is not None and " ".join(note.get_text().split()) == f"Note: {GEMINI_NOTE}"
    assert machine_facts(page)["note"].get_text() == GEMINI_NOTE


async def test_a_missing_gemini_is_listed_with_the_note_and_others_without(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_cli_on_path(tmp_path, monkeypatch, "claude", "2.1.332 (Claude Code)")
    page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
    items = {
        strong.get_text(): li
        for li in page.select(".install-list li")
        if (strong := li.find("strong")) is not None
    }
    note = items["Gemini CLI"].select_one(".backend-notice")
    assert note is not None and GEMINI_NOTE in " ".join(note.get_text().split())
    assert [label for label, li in items.items() if li.select_one(".backend-notice")] == [
        "Gemini CLI"
    ]
