"""Profile pages over HTTP: the list, the form and its validation, secrets, duplicates,
delete, the folder picker, the instructions file, the backends page and the wizard."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from bs4 import BeautifulSoup, Tag

from app.brains.claude.brain import ClaudeBrain
from tests.conftest import FAKE_CLAUDE, TOKEN, LiveServer, write_scenario

SECRET = "sk-do-not-show-0123456789"
MCP_SECRET = "Bearer mcp-do-not-show-42"


def soup_of(r: httpx.Response) -> BeautifulSoup:
    return BeautifulSoup(r.text, "html.parser")


def text_of(el: Tag | None) -> str:
    assert el is not None
    return " ".join(el.get_text(" ").split())


def field_value(page: BeautifulSoup, name: str) -> str:
    """What the form shows in field ``name`` (input value, textarea text, chosen option)."""
    el = page.select_one(f"#profile-form [name={name}], #wizard [name={name}]")
    assert el is not None, name
    if el.name == "textarea":
        return el.get_text()
    if el.name == "select":
        chosen = el.select_one("option[selected]")
        return str(chosen["value"]) if chosen else ""
    return str(el.get("value", ""))


def write_fake_claude(
    folder: Path, monkeypatch: pytest.MonkeyPatch, answer: str, name: str = "claude"
) -> Path:
    """An executable ``folder/name`` that runs the fake, answering ``answer`` once (the
    scenario is set in the server's environment)."""
    folder.mkdir(exist_ok=True)
    wrapper = folder / name
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "2.1.332 (Claude Code, fake)"; exit 0; fi\n'
        f'exec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    scenario = write_scenario(folder / f"{name}-scenario.json", [[{"text": answer}]])
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", str(scenario))
    return wrapper


def install_fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> Path:
    """Put a ``claude`` first on PATH that runs the fake, answering ``answer`` once."""
    bin_dir = tmp_path / "bin"
    write_fake_claude(bin_dir, monkeypatch, answer)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def valid_form(project_dir: Path, **changes: str) -> dict[str, str]:
    form = {
        "name": "keep me",
        "backend": "claude",
        "cwd": str(project_dir),
        "model": "opus",
        "permission_mode": "acceptEdits",
        "allowed_tools": "Read\nBash(npm test:*)",
        "disallowed_tools": "Bash(rm:*)",
        "mcp_servers": '{"files": {"command": "mcp-files", "args": ["--root", "."]}}',
        "env": f"API_KEY={SECRET}\nEMPTY=",
        "command": "claude --verbose 'two words'",
        "reasoning_effort": "",
        "idle_timeout_s": "900",
        "permission_timeout_s": "0",
    }
    return form | changes


async def make_profile(client: httpx.AsyncClient, project_dir: Path, **fields: Any) -> str:
    body = {"name": "demo", "backend": "claude", "cwd": str(project_dir), **fields}
    r = await client.post("/api/profiles", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


# -- first run and the backends page ---------------------------------------------------------


async def test_fresh_data_dir_goes_to_the_wizard(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    r = await client.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/welcome"
    page = soup_of(await client.get("/welcome"))
    legends = [text_of(legend) for legend in page.select("#wizard fieldset.step > legend")]
    assert legends == [
        "Step 1 of 3 Which agent?",
        "Step 2 of 3 Which folder?",
        "Step 3 of 3 How careful?",
    ]
    checked = page.select_one("input[name=permission_mode][checked]")
    assert checked is not None and checked["value"] == "default"
    assert page.select_one("label[for=f-cwd]") is not None
    await make_profile(client, project_dir)
    assert (await client.get("/")).status_code == 200


async def test_backends_page_lists_claude_with_its_install_hint(client: httpx.AsyncClient) -> None:
    r = await client.get("/backends")
    assert r.status_code == 200
    page = soup_of(r)
    claude = page.select_one("#backend-claude")
    assert claude is not None
    assert text_of(claude.select_one("h2")).startswith("Claude Code")
    assert text_of(claude.select_one(".install-hint pre code")) == ClaudeBrain.install_hint
    assert claude.select_one(".install-hint button.copy") is not None
    status = text_of(claude.select_one(".backend-status"))
    assert "found" in status  # found or not found, with its version when found
    facts = text_of(claude.select_one("dl.fields"))
    assert "CLAUDE.md" in facts and "--resume" in facts and "bypassPermissions" in facts
    assert "Refuse a single tool" in text_of(claude.select_one("ul.caps .has"))
    assert page.select_one("#backend-grok ul.caps .lacks") is not None
    assert page.select_one("#backend-agy") is None
    # What the real CLI was shown to do, from the conformance table.
    lacks = page.select_one("#backend-pi ul.conformance li[data-feature=allow_always]")
    assert lacks is not None and "lacks" in (lacks.get("class") or [])
    assert "the CLI lacks it" in text_of(lacks)
    images = page.select_one("#backend-grok ul.conformance li[data-feature=images]")
    assert images is not None and "refused by the app" in text_of(images)
    claude_cells = claude.select("ul.conformance li.has")
    assert len(claude_cells) == 10
    generic = page.select_one("#backend-acp")
    assert generic is not None and generic.select_one("ul.conformance") is None
    assert "not run in Angelia's test suite" in text_of(generic)
    nav = page.select_one("nav a[href='/backends']")
    assert nav is not None and nav["aria-current"] == "page"


# -- the form ----------------------------------------------------------------------------------


async def test_new_profile_form_creates_a_profile(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    page = soup_of(await client.get("/profiles/new"))
    assert field_value(page, "permission_timeout_s") == "600"
    assert page.select("#models-claude option")[0]["value"] == "sonnet"
    assert page.select_one("[data-needs=per_session_mcp] #f-mcp_servers") is not None

    r = await client.post("/profiles/new", data=valid_form(project_dir))
    assert r.status_code == 303, r.text
    profile_id = r.headers["location"].rsplit("/", 1)[1]
    stored = (await client.get(f"/api/profiles/{profile_id}")).json()
    assert stored["model"] == "opus" and stored["permission_mode"] == "acceptEdits"
    assert stored["allowed_tools"] == ["Read", "Bash(npm test:*)"]
    assert stored["disallowed_tools"] == ["Bash(rm:*)"]
    assert stored["mcp_servers"] == {"files": {"command": "mcp-files", "args": ["--root", "."]}}
    assert stored["env"] == {"API_KEY": SECRET, "EMPTY": ""}
    assert stored["command"] == ["claude", "--verbose", "two words"]
    assert stored["idle_timeout_s"] == 900 and stored["permission_timeout_s"] == 0

    listing = soup_of(await client.get("/profiles"))
    row = listing.select_one(f"#profile-{profile_id}")
    assert row is not None
    cells = [text_of(td) for td in row.select("td")]
    assert cells[:5] == ["keep me", "claude · opus", str(project_dir), "acceptEdits", "0"]
    actions = {str(a["href"]) for a in row.select("a")}
    assert {f"/profiles/{profile_id}/edit", f"/profiles/new?from={profile_id}"} <= actions


async def test_one_argument_per_line_is_taken_literally(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    form = valid_form(project_dir, command="/opt/my tools/claude\n--flag with space\n")
    r = await client.post("/profiles/new", data=form)
    assert r.status_code == 303, r.text
    stored = (await client.get(f"/api/profiles/{r.headers['location'].rsplit('/', 1)[1]}")).json()
    assert stored["command"] == ["/opt/my tools/claude", "--flag with space"]


def _cases(project_dir: Path) -> list[tuple[str, dict[str, str], str]]:
    a_file = project_dir / "file.txt"
    a_file.write_text("x")
    return [
        ("name", {"name": "   "}, "at least 1 character"),
        ("backend", {"backend": "agy"}, "agy cannot be a backend"),
        ("backend", {"backend": "nope"}, "unknown backend 'nope'"),
        ("cwd", {"cwd": "relative/path"}, "must be an absolute path"),
        ("cwd", {"cwd": str(project_dir / "missing")}, "does not exist or is not a directory"),
        ("cwd", {"cwd": str(a_file)}, "does not exist or is not a directory"),
        ("permission_mode", {"permission_mode": "nonsense"}, "Input should be"),
        ("bypass_confirm", {"permission_mode": "bypassPermissions"}, 'Type "bypass"'),
        (
            "bypass_confirm",
            {"permission_mode": "bypassPermissions", "bypass_confirm": "yes"},
            'Type "bypass"',
        ),
        ("allowed_tools", {"allowed_tools": "Read\nBash("}, "line 2: 'Bash(' is not a valid rule"),
        ("disallowed_tools", {"disallowed_tools": "Bash()"}, "empty specifier"),
        ("mcp_servers", {"mcp_servers": '{\n  "a": {,}\n}'}, "invalid JSON at line 2, column"),
        ("mcp_servers", {"mcp_servers": "[1]"}, "must be a JSON object"),
        ("mcp_servers", {"mcp_servers": '{"a": {"type": "http"}}'}, "needs an http(s) 'url'"),
        ("mcp_servers", {"mcp_servers": '{"a": {"args": []}}'}, "non-empty string 'command'"),
        ("env", {"env": f"1BAD={SECRET}"}, "'1BAD' is not a valid environment variable name"),
        ("env", {"env": SECRET}, "line 1 is not NAME=value"),
        ("env", {"env": "NEW=\u2022\u2022\u2022\u2022"}, "NEW has no stored value"),
        ("command", {"command": "claude 'unterminated"}, "cannot split it like a shell"),
        (
            "reasoning_effort",
            {"backend": "gemini", "reasoning_effort": "high"},
            "cannot take a reasoning effort",
        ),
        ("reasoning_effort", {"backend": "grok", "reasoning_effort": "max"}, "Input should be"),
        ("idle_timeout_s", {"idle_timeout_s": "30"}, "greater than or equal to 60"),
        ("idle_timeout_s", {"idle_timeout_s": "soon"}, "whole number of seconds"),
        ("permission_timeout_s", {"permission_timeout_s": "-1"}, "greater than or equal to 0"),
        (
            "disallowed_tools",
            {"backend": "grok", "disallowed_tools": "Read"},
            "Grok Build runs Read without asking",
        ),
        ("command", {"backend": "acp", "command": ""}, "has no command of its own"),
    ]


async def test_each_invalid_field_shows_its_error_and_keeps_the_rest(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    for field, changes, message in _cases(project_dir):
        form = valid_form(project_dir, **changes)
        r = await client.post("/profiles/new", data=form)
        assert r.status_code == 422, (field, changes)
        page = soup_of(r)
        error = page.select_one(f"#err-{field}")
        assert error is not None, (field, changes, page.select(".field-error"))
        assert message in text_of(error), (field, text_of(error))
        control = page.select_one(f"#f-{field}")
        assert control is not None, field
        assert control.get("aria-invalid") == "true", field
        assert f"err-{field}" in str(control.get("aria-describedby", "")), field
        assert page.select_one(f"#form-problems a[href='#f-{field}']") is not None, field
        # Every other field is shown as it was sent; secrets are not shown at all.
        for other in ("name", "model", "allowed_tools", "disallowed_tools", "command"):
            if other not in changes and other != field:
                assert field_value(page, other) == form[other], (field, other)
        assert SECRET not in r.text, (field, changes)
        assert page.select("#profile-form [name=backend] option[selected]") or "backend" in changes
    assert (await client.get("/api/profiles")).json() == []


async def test_env_values_never_reach_the_page(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    mcp = {
        "web": {
            "type": "http",
            "url": "https://mcp.example",
            "headers": {"Authorization": MCP_SECRET},
        }
    }
    profile_id = await make_profile(
        client, project_dir, env={"API_KEY": SECRET, "MODE": "x"}, mcp_servers=mcp
    )
    for path in (
        f"/profiles/{profile_id}",
        f"/profiles/{profile_id}/edit",
        f"/profiles/new?from={profile_id}",
        "/profiles",
    ):
        r = await client.get(path)
        assert r.status_code == 200, path
        assert SECRET not in r.text and MCP_SECRET not in r.text, path
    page = soup_of(await client.get(f"/profiles/{profile_id}/edit"))
    assert (
        field_value(page, "env")
        == "API_KEY=\u2022\u2022\u2022\u2022\nMODE=\u2022\u2022\u2022\u2022\n"
    )
    assert "\u2022\u2022\u2022\u2022" in field_value(page, "mcp_servers")

    # A failed save does not echo a newly typed value either.
    form = {
        **_form_of(page),
        "env": "API_KEY=\u2022\u2022\u2022\u2022\nNEW=typed-secret-77",
        "name": "",
    }
    r = await client.post(f"/profiles/{profile_id}/edit", data=form)
    assert r.status_code == 422
    assert "typed-secret-77" not in r.text and SECRET not in r.text
    failed = soup_of(r)
    assert field_value(failed, "env") == "API_KEY=\u2022\u2022\u2022\u2022\nNEW=\n"
    assert "NEW" in text_of(failed.select_one("#note-env"))

    # Masked values are kept, a new one is added, a removed line is removed.
    form = {**_form_of(page), "env": "API_KEY=\u2022\u2022\u2022\u2022\nNEW=v2\n"}
    r = await client.post(f"/profiles/{profile_id}/edit", data=form)
    assert r.status_code == 303, r.text
    stored = (await client.get(f"/api/profiles/{profile_id}")).json()
    assert stored["env"] == {"API_KEY": SECRET, "NEW": "v2"}
    assert stored["mcp_servers"] == mcp


def _form_of(page: BeautifulSoup) -> dict[str, str]:
    """The form's fields as a browser would send them."""
    form = page.select_one("#profile-form")
    assert form is not None
    data: dict[str, str] = {}
    for el in form.select("input[name], textarea[name], select[name]"):
        name = str(el["name"])
        if el.name == "textarea":
            data[name] = el.get_text()
        elif el.name == "select":
            chosen = el.select_one("option[selected]") or el.select_one("option")
            data[name] = str(chosen["value"]) if chosen else ""
        elif el.get("type") == "checkbox":
            if el.has_attr("checked"):
                data[name] = str(el.get("value", "on"))
        else:
            data[name] = str(el.get("value", ""))
    return data


async def test_edit_saves_and_bypass_needs_the_word_once(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    profile_id = await make_profile(client, project_dir, allowed_tools=["Read"])
    page = soup_of(await client.get(f"/profiles/{profile_id}/edit"))
    assert page.select_one("#profile-form select[name=backend]") is None  # fixed on edit
    form = _form_of(page) | {"permission_mode": "bypassPermissions", "model": "haiku"}
    r = await client.post(f"/profiles/{profile_id}/edit", data=form)
    assert r.status_code == 422
    assert 'Type "bypass"' in text_of(soup_of(r).select_one("#err-bypass_confirm"))
    r = await client.post(f"/profiles/{profile_id}/edit", data=form | {"bypass_confirm": "bypass"})
    assert r.status_code == 303 and r.headers["location"] == f"/profiles/{profile_id}"
    stored = (await client.get(f"/api/profiles/{profile_id}")).json()
    assert stored["permission_mode"] == "bypassPermissions" and stored["model"] == "haiku"
    assert stored["allowed_tools"] == ["Read"]
    # Saving a profile that is already in bypass asks no second time.
    page = soup_of(await client.get(f"/profiles/{profile_id}/edit"))
    r = await client.post(f"/profiles/{profile_id}/edit", data=_form_of(page) | {"name": "renamed"})
    assert r.status_code == 303
    assert (await client.get(f"/api/profiles/{profile_id}")).json()["name"] == "renamed"


async def test_duplicate_prefills_a_new_profile(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    profile_id = await make_profile(
        client,
        project_dir,
        model="sonnet",
        allowed_tools=["Read", "Bash(git status)"],
        command=["claude", "--debug"],
        env={"API_KEY": SECRET},
        permission_timeout_s=30,
    )
    page = soup_of(await client.get(f"/profiles/new?from={profile_id}"))
    assert field_value(page, "name") == "demo (copy)"
    assert field_value(page, "backend") == "claude"
    assert field_value(page, "cwd") == str(project_dir)
    assert field_value(page, "model") == "sonnet"
    assert field_value(page, "allowed_tools") == "Read\nBash(git status)"
    assert field_value(page, "command") == "claude --debug"
    assert field_value(page, "permission_timeout_s") == "30"
    assert field_value(page, "copy_from") == profile_id
    assert SECRET not in str(page)

    r = await client.post("/profiles/new", data=_form_of(page))
    assert r.status_code == 303, r.text
    copy_id = r.headers["location"].rsplit("/", 1)[1]
    assert copy_id != profile_id
    copy = (await client.get(f"/api/profiles/{copy_id}")).json()
    assert copy["name"] == "demo (copy)" and copy["env"] == {"API_KEY": SECRET}
    assert copy["command"] == ["claude", "--debug"]
    assert (await client.get("/profiles/new?from=nope")).status_code == 404


async def test_delete_asks_first_and_refuses_a_profile_with_sessions(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    used = await make_profile(client, project_dir, name="used")
    spare = await make_profile(client, project_dir, name="spare")
    r = await client.post("/api/sessions", json={"profile_id": used})
    assert r.status_code == 201
    page = soup_of(await client.get("/profiles"))
    confirm = page.select_one(f"#profile-{used} details.confirm-profile-delete form")
    assert confirm is not None and confirm["action"] == f"/profiles/{used}/delete"

    r = await client.post(f"/profiles/{used}/delete")
    assert r.status_code == 409
    assert "delete its sessions first" in text_of(soup_of(r).select_one("#profiles-error"))
    assert (await client.get(f"/api/profiles/{used}")).status_code == 200

    r = await client.post(f"/profiles/{spare}/delete")
    assert r.status_code == 303 and r.headers["location"] == "/profiles"
    assert (await client.get(f"/api/profiles/{spare}")).status_code == 404
    assert (await client.post(f"/profiles/{spare}/delete")).status_code == 404


async def test_cookie_signed_in_form_posts_need_our_origin(
    server: LiveServer, project_dir: Path
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as c:
        await c.get(f"/profiles?token={TOKEN}")
        form = valid_form(project_dir)
        assert (await c.post("/profiles/new", data=form)).status_code == 403
        r = await c.post("/profiles/new", data=form, headers={"Origin": server.url})
        assert r.status_code == 303


# -- folder picker -------------------------------------------------------------------------


async def test_folder_picker_lists_only_folders(client: httpx.AsyncClient, tmp_path: Path) -> None:
    root = tmp_path / "pick"
    for name in ("beta", "Alpha", ".hidden", "gamma"):
        (root / name).mkdir(parents=True)
    (root / "notes.txt").write_text("not a folder")
    (root / "link").symlink_to(root / "gamma")

    r = await client.get("/fs/dirs", params={"path": str(root)})
    assert r.status_code == 200
    page = soup_of(r)
    listed = [str(li["data-dir"]) for li in page.select("li[data-dir]")]
    assert listed == [str(root / n) for n in ("Alpha", "beta", "gamma", "link", ".hidden")]
    assert page.select_one("[data-pick]")["data-pick"] == str(root)  # type: ignore[index]
    up = page.select_one("[data-up]")
    assert up is not None and up["hx-get"] == f"/fs/dirs?path={quote(str(root.parent))}"

    missing = root / "nope"
    r = await client.get("/fs/dirs", params={"path": str(missing)})
    assert r.status_code == 404 and "does not exist" in text_of(
        soup_of(r).select_one("[role=alert]")
    )
    assert soup_of(r).select_one("[data-pick]") is None
    r = await client.get("/fs/dirs", params={"path": str(missing)}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "does not exist" in r.text  # htmx swaps only 2xx
    r = await client.get("/fs/dirs", params={"path": "relative/dir"})
    assert r.status_code == 422 and "absolute" in r.text
    r = await client.get("/fs/dirs", params={"path": str(root / "notes.txt")})
    assert r.status_code == 422 and "not a folder" in r.text
    # The Browse button sends the half-typed field: the nearest existing folder opens.
    r = await client.get("/fs/dirs", params={"cwd": str(root / "beta" / "not-yet")})
    assert r.status_code == 200
    assert soup_of(r).select_one(".dirs")["data-path"] == str(root / "beta")  # type: ignore[index]
    if os.geteuid() != 0:  # root reads everything
        locked = root / "beta"
        locked.chmod(0)
        try:
            r = await client.get("/fs/dirs", params={"path": str(locked)})
            assert r.status_code == 403 and "Cannot read" in r.text
        finally:
            locked.chmod(0o755)


# -- instructions file on the profile page ---------------------------------------------------


async def test_instructions_create_then_overwrite_after_the_diff(
    client: httpx.AsyncClient, project_dir: Path
) -> None:
    profile_id = await make_profile(client, project_dir)
    target = project_dir / "CLAUDE.md"
    page = soup_of(await client.get(f"/profiles/{profile_id}"))
    assert "does not exist yet" in text_of(page.select_one("#instr-state"))
    assert "## How to run the tests" in text_of(page.select_one("#instr-content"))

    url = f"/profiles/{profile_id}/instructions"
    r = await client.post(url, data={"content": "# One\r\nfirst\r\n"})
    assert r.status_code == 303 and r.headers["location"].endswith("#instructions")
    assert target.read_text() == "# One\nfirst\n"

    r = await client.post(url, data={"content": "# One\nsecond\n"})
    assert r.status_code == 409
    page = soup_of(r)
    assert [text_of(s) for s in page.select("#overwrite pre.diff .del")] == ["-first"]
    assert [text_of(s) for s in page.select("#overwrite pre.diff .add")] == ["+second"]
    assert page.select_one("input[name=overwrite][type=checkbox]") is not None
    assert text_of(page.select_one("#instr-content")) == "# One second"
    seen = str(page.select_one("input[name=seen]")["value"])  # type: ignore[index]
    assert target.read_text() == "# One\nfirst\n"

    # A confirmation for a version of the file the user did not see is not enough.
    target.write_text("# One\nchanged meanwhile\n")
    r = await client.post(url, data={"content": "# One\nsecond\n", "overwrite": "1", "seen": seen})
    assert r.status_code == 409 and "changed since you last saw it" in r.text
    seen = str(soup_of(r).select_one("input[name=seen]")["value"])  # type: ignore[index]
    r = await client.post(url, data={"content": "# One\nsecond\n", "overwrite": "1", "seen": seen})
    assert r.status_code == 303
    assert target.read_text() == "# One\nsecond\n"
    info = (await client.get(f"/api/profiles/{profile_id}/instructions")).json()
    assert info["exists"] and info["content"] == "# One\nsecond\n"
    page = soup_of(await client.get(f"/profiles/{profile_id}"))
    assert "exists" in text_of(page.select_one("#instr-state"))


# -- the wizard without a browser -------------------------------------------------------------


async def test_wizard_creates_profile_session_and_never_overwrites_silently(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: httpx.AsyncClient,
    project_dir: Path,
) -> None:
    install_fake_claude(tmp_path, monkeypatch, "hi")
    (project_dir / "CLAUDE.md").write_text("# Mine\nkeep this\n")
    page = soup_of(await client.get("/welcome"))
    radio = page.select_one("input[name=backend][value=claude]")
    assert radio is not None and radio.has_attr("checked")
    assert "2.1.332" in text_of(radio.find_parent("label"))  # type: ignore[arg-type]
    form = {
        "backend": "claude",
        "cwd": str(project_dir),
        "permission_mode": "bypassPermissions",
        "create_instructions": "1",
        "instructions": "# Project\nnew text\n",
        "template_cwd": str(project_dir),
    }
    r = await client.post("/welcome", data=form)
    assert r.status_code == 422
    assert 'Type "bypass"' in text_of(soup_of(r).select_one("#err-bypass_confirm"))
    assert field_value(soup_of(r), "cwd") == str(project_dir)

    form["bypass_confirm"] = "bypass"
    r = await client.post("/welcome", data=form)
    assert r.status_code == 409
    page = soup_of(r)
    assert "-keep this" in [text_of(s) for s in page.select("#overwrite pre.diff .del")]
    assert (project_dir / "CLAUDE.md").read_text() == "# Mine\nkeep this\n"
    assert (await client.get("/api/profiles")).json() == []

    seen = str(page.select_one("input[name=seen]")["value"])  # type: ignore[index]
    r = await client.post("/welcome", data=form | {"overwrite": "1", "seen": seen})
    assert r.status_code == 303 and r.headers["location"].startswith("/sessions/")
    assert (project_dir / "CLAUDE.md").read_text() == "# Project\nnew text\n"
    [profile] = (await client.get("/api/profiles")).json()
    assert profile["backend"] == "claude" and profile["cwd"] == str(project_dir.resolve())
    assert profile["permission_mode"] == "bypassPermissions" and profile["command"] is None
    sid = r.headers["location"].rsplit("/", 1)[1]
    assert (await client.get(f"/api/sessions/{sid}")).json()["profile_id"] == profile["id"]


async def test_wizard_refuses_a_backend_that_is_not_installed(
    client: httpx.AsyncClient, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(project_dir))  # nothing to find
    r = await client.post(
        "/welcome",
        data={"backend": "claude", "cwd": str(project_dir), "permission_mode": "default"},
    )
    assert r.status_code == 422
    error = text_of(soup_of(r).select_one("#err-backend"))
    assert "not found on this machine" in error and ClaudeBrain.install_hint in error
    assert (await client.get("/api/profiles")).json() == []


async def test_profile_page_edits_a_rule(server: Any, project_dir: Any) -> None:
    async with server.client() as api:
        pid = (
            await api.post(
                "/api/profiles", json={"name": "e", "backend": "claude", "cwd": str(project_dir)}
            )
        ).json()["id"]
        rid = (
            await api.post(f"/api/profiles/{pid}/rules", json={"rule": "Read", "decision": "allow"})
        ).json()["id"]
        r = await api.post(
            f"/profiles/{pid}/rules/{rid}", data={"rule": "Bash(git add:*)", "decision": "deny"}
        )
        assert r.status_code == 303
        rules = (await api.get(f"/api/profiles/{pid}/rules")).json()
        assert [(x["rule"], x["decision"]) for x in rules] == [("Bash(git add:*)", "deny")]
        r = await api.post(
            f"/profiles/{pid}/rules/{rid}", data={"rule": "Bash(", "decision": "deny"}
        )
        assert r.status_code == 422 and "not a valid rule" in r.text
        page = await api.get(f"/profiles/{pid}")
        assert f'action="/profiles/{pid}/rules/{rid}"' in page.text
