"""The welcome page shows what ``angelia doctor`` says, as text, open when something is
wrong."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup, Tag

from app.brains.claude.brain import ClaudeBrain
from tests.helpers import fake_cli
from tests.security._support import REPO


def only_cli_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, version: str
) -> Path:
    """A fake ``name`` that prints ``version``, alone on the PATH the server looks at."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    return fake_cli(bindir, name, f"print({version!r})")


def machine_facts(page: BeautifulSoup) -> dict[str, Tag]:
    panel = page.select_one("details#machine")
    assert panel is not None
    return {
        " ".join(dt.get_text(" ").split()): dd
        for dt, dd in zip(panel.select("dl dt"), panel.select("dl dd"), strict=True)
    }


async def test_the_welcome_page_shows_the_doctors_facts(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = only_cli_on_path(tmp_path, monkeypatch, "claude", "<b>2.1.332</b> (Claude Code)")
    page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
    panel = page.select_one("details#machine")
    assert panel is not None and not panel.has_attr("open")
    summary = panel.select_one("summary")
    assert summary is not None and " ".join(summary.get_text().split()) == "This machine: ready"
    facts = machine_facts(page)
    claude = facts["backend claude"]
    # A CLI's output is text on the page, never markup.
    assert claude.get_text() == f"{exe} · <b>2.1.332</b> (Claude Code)"
    assert claude.find("b") is None
    assert facts["default backend"].get_text().startswith("claude (the only agent found")
    assert facts["default can run"].get_text().startswith("yes: ")
    assert facts["data dir"].get_text() == str(tmp_path / "data")
    assert facts["data dir writable"].get_text() == "yes"
    assert facts["fts5"].get_text() == "available"
    assert "field-error-inline" not in str(panel)


async def test_a_missing_agent_opens_the_facts_with_the_problem(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
    panel = page.select_one("details#machine")
    assert panel is not None and panel.has_attr("open")
    summary = panel.select_one("summary")
    assert summary is not None and "1 problem" in summary.get_text()
    can_run = machine_facts(page)["default can run"]
    assert "field-error-inline" in (can_run.get("class") or [])
    assert "Problem:" in can_run.get_text() and ClaudeBrain.install_hint in can_run.get_text()


async def test_each_agent_says_which_features_it_was_shown_to_have(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_cli_on_path(tmp_path, monkeypatch, "grok", "0.2.111")
    page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
    option = page.select_one("input[name=backend][value=grok]")
    assert option is not None and option.parent is not None
    features = option.parent.select_one(".features")
    assert features is not None
    assert "refused by the app: images, plan mode" in features.get_text()
    missing = [li.get_text(" ") for li in page.select(".install-list li")]
    assert any("Gemini CLI" in t and "refused by the app: per-session MCP" in t for t in missing)


async def test_the_wizard_does_not_offer_the_checkout_as_a_project(
    client: httpx.AsyncClient, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def first_folder() -> str:
        page = BeautifulSoup((await client.get("/welcome")).text, "html.parser")
        field = page.select_one("input[name=cwd]")
        assert field is not None
        return str(field.get("value", ""))

    # Started from Angelia's own source tree, as the quick start does: left to the user.
    monkeypatch.chdir(REPO / "app")
    assert await first_folder() == ""
    monkeypatch.chdir(project_dir)
    assert await first_folder() == str(project_dir)


async def test_a_path_typed_without_script_makes_the_profile(
    client: httpx.AsyncClient, tmp_path: Path, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No radio to tick without script: the one path typed says which agent, is checked
    again on submit, and becomes the profile's command."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    agent = fake_cli(tmp_path, "claude-elsewhere", "print('2.1.332 (Claude Code)')")
    form = {"cwd": str(project_dir), "permission_mode": "default", "path_claude": str(agent)}
    r = await client.post("/welcome", data=form)
    assert r.status_code == 303, r.text
    profiles = (await client.get("/api/profiles")).json()
    assert [(p["backend"], p["command"]) for p in profiles] == [("claude", [str(agent)])]


async def test_a_refused_path_is_listed_with_its_reason_and_makes_nothing(
    client: httpx.AsyncClient, tmp_path: Path, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    form = {
        "backend": "claude",
        "cwd": str(project_dir),
        "permission_mode": "default",
        "path_claude": "bin/claude",
    }
    r = await client.post("/welcome", data=form)
    assert r.status_code == 422
    page = BeautifulSoup(r.text, "html.parser")
    problems = page.select_one("#form-problems")
    assert problems is not None
    link = problems.select_one("a[href='#f-path_claude']")
    assert link is not None and "Path to Claude Code: Give the full path" in link.get_text()
    field = page.select_one("#f-path_claude")
    assert field is not None and field.get("value") == "bin/claude"
    assert field.get("aria-invalid") == "true"
    error = page.select_one("#elsewhere-claude #err-path_claude")
    assert error is not None and "is relative" in error.get_text()
    assert (await client.get("/api/profiles")).json() == []
    # The same check on its own, as the Check button asks it: the fragment alone.
    r = await client.post("/welcome/check", data={"check": "claude", "path_claude": "bin/claude"})
    assert r.status_code == 422 and "is relative" in r.text and "<form" not in r.text
