"""What ``angelia serve`` and ``angelia open`` give a browser: never the master token, on
its command line or printed, but a private page holding a link that signs in once, within
2 minutes. Through a real ``angelia serve``, with ``BROWSER`` a script that records what it
was started with (Python's webbrowser obeys it)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import httpx

from app.web.access.guard import COOKIE_NAME
from tests.conftest import TOKEN, LiveServer
from tests.faults._support import ServerProcess, wait_until
from tests.security._support import REPO

if TYPE_CHECKING:
    from app.services.access.codes import SignInCodes


def fake_browser(tmp_path: Path) -> tuple[Path, Path]:
    """A ``BROWSER`` that writes its arguments, one a line, to the returned log."""
    log = tmp_path / "browser-argv.txt"
    script = tmp_path / "fake-browser"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{log}'\n")
    script.chmod(0o700)
    return script, log


def opened_link(argv_log: Path) -> tuple[Path, str]:
    """The page the browser was given, and the link in it; checks what lies around."""
    argv = argv_log.read_text()
    assert TOKEN not in argv and "code=" not in argv, argv
    [arg] = argv.split()
    assert arg.startswith("file:///"), arg
    page = Path(unquote(urlsplit(arg).path))
    assert page.stat().st_mode & 0o777 == 0o600
    text = page.read_text()
    assert TOKEN not in text
    found = re.search(r'content="0;url=([^"]+)"', text)
    assert found, text
    return page, html.unescape(found.group(1))


async def assert_signs_in_once(link: str, base: str) -> None:
    async with httpx.AsyncClient(timeout=30) as browser:
        r = await browser.get(link)
        # A page that moves on to / itself (see _code_login), with the cookie.
        assert r.status_code == 200 and 'content="0;url=/"' in r.text
        assert browser.cookies.get(COOKIE_NAME)
        assert (await browser.get(f"{base}/api/sessions")).status_code == 200
    async with httpx.AsyncClient(timeout=30) as another:
        r = await another.get(link)
        assert r.status_code == 403
        assert r.headers["content-type"].startswith("text/html")
        assert "used already" in r.text and "angelia open" in r.text
        assert COOKIE_NAME not in r.headers.get("set-cookie", "")
        assert (await another.get(f"{base}/api/sessions")).status_code == 401


def serve_with_fake_browser(tmp_path: Path) -> tuple[ServerProcess, Path]:
    """``angelia serve`` that opens a browser: the recording script. Returns its log."""
    script, argv_log = fake_browser(tmp_path)
    env = {**os.environ, "BROWSER": str(script)}
    server = ServerProcess(tmp_path / "data", tmp_path, env=env, browser=True).start()
    try:
        wait_until(argv_log.exists, 20, "serve to start the browser")
    except AssertionError:
        server.stop()
        raise
    return server, argv_log


async def test_serve_opens_a_private_page_with_a_single_use_link(tmp_path: Path) -> None:
    server, argv_log = serve_with_fake_browser(tmp_path)
    try:
        page, link = opened_link(argv_log)
        assert page.parent == server.data_dir
        assert re.fullmatch(rf"{re.escape(server.url)}/signin\?code=[\w-]{{43}}", link)
        # What it printed is that link too, and never the token.
        assert server.printed_link == link
        assert TOKEN not in server.log()
        await assert_signs_in_once(link, server.url)
    finally:
        server.stop()


async def test_an_expired_or_unknown_link_is_refused_with_a_page(server: LiveServer) -> None:
    codes: SignInCodes = server.app.state.signin_codes
    old = codes.issue(now=datetime.now(UTC) - timedelta(minutes=2, seconds=1))
    fresh = codes.issue(now=datetime.now(UTC) - timedelta(minutes=1, seconds=50))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as browser:
        r = await browser.get("/signin", params={"code": old})
        assert r.status_code == 403 and "expired" in r.text and "angelia open" in r.text
        r = await browser.get("/signin", params={"code": "x" * 43})
        assert r.status_code == 403 and "not one this server made" in r.text
        r = await browser.get("/signin")
        assert r.status_code == 403 and not browser.cookies.get(COOKIE_NAME)
        # Still within its 2 minutes: it works.
        r = await browser.get("/signin", params={"code": fresh})
        assert r.status_code == 200 and browser.cookies.get(COOKIE_NAME)


def angelia_open(data_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "app.cli", "open", "--data-dir", str(data_dir)]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


async def test_angelia_open_signs_a_browser_in_afresh(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    # The token kept in the data dir, as a user's install has it.
    (data_dir / "token").write_text(TOKEN + "\n")
    (data_dir / "token").chmod(0o600)
    server = ServerProcess(data_dir, tmp_path).start()
    script, argv_log = fake_browser(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANGELIA_")}
    env["BROWSER"] = str(script)
    try:
        done = angelia_open(data_dir, env)
        assert done.returncode == 0, done.stderr
        assert TOKEN not in done.stdout + done.stderr
        _, link = opened_link(argv_log)
        assert link != server.printed_link and link.startswith(f"{server.url}/signin?code=")
        assert f"Open {link}" in done.stdout
        await assert_signs_in_once(link, server.url)
        # Each run makes a new link; the printed one still works until it is used.
        argv_log.unlink()
        assert angelia_open(data_dir, env).returncode == 0
        _, second = opened_link(argv_log)
        assert second != link
        await assert_signs_in_once(second, server.url)
        await assert_signs_in_once(server.printed_link, server.url)
    finally:
        server.stop()
    argv_log.unlink()
    done = angelia_open(data_dir, env)
    assert done.returncode == 1
    assert "no Angelia server is running" in done.stderr
    assert not argv_log.exists(), "no browser opened without a server"
