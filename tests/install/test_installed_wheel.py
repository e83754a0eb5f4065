"""The wheel, installed into a fresh venv outside the checkout, runs the whole app.

`.ci/setup` builds the wheel from the checkout's files and installs it into a new venv;
ANGELIA_WHEEL_BIN (in .venv/ci.env) names that venv's `angelia`. Here it serves from an empty
folder with a clean environment, so a template, static file or migration missing from the
wheel fails a test here instead of being picked up from the source tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from bs4 import BeautifulSoup

from app import __version__
from tests.api.test_chat import make_session
from tests.conftest import TOKEN
from tests.faults._support import ServerProcess
from tests.helpers import count, send, setup_executable, wait_for_events
from tests.security._support import REPO, pid_alive

# The folders of the repository that the wheel ships, and where they land in the package.
SHIPPED = {"app": "", "templates": "templates", "static": "static", "migrations": "migrations"}
# How long after SIGINT/SIGTERM the server may take to exit.
STOP_LIMIT_S = 3.0
# How long a server that has not stopped is watched before the SSE client lets go of it.
HANG_WATCH_S = 10.0


@pytest.fixture(scope="module")
def angelia() -> Path:
    return setup_executable("ANGELIA_WHEEL_BIN", None, "angelia installed from the wheel")


def clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without anything that could point back at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ANGELIA_"))}
    env.pop("VIRTUAL_ENV", None)
    home.mkdir(parents=True, exist_ok=True)
    return env | {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}


def installed(angelia: Path, code: str, cwd: Path) -> Any:
    """Run ``code`` with the install's own python from ``cwd``; return what it prints (JSON)."""
    python = angelia.parent / "python"
    run = subprocess.run(
        [str(python), "-c", code],
        cwd=cwd,
        env=clean_env(cwd / "home"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(run.stdout)


def files_below(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_app_and_its_files_come_from_the_install(angelia: Path, tmp_path: Path) -> None:
    where = installed(
        angelia,
        "import json, app, app.resources as r; print(json.dumps([app.__file__,"
        " str(r.templates_dir()), str(r.static_dir()), str(r.migrations_dir())]))",
        tmp_path,
    )
    venv = angelia.parent.parent.resolve()
    for path in map(Path, where):
        assert path.resolve().is_relative_to(venv), (path, venv)
        assert not path.resolve().is_relative_to(REPO), path
    version = subprocess.run(
        [str(angelia), "--version"],
        cwd=tmp_path,
        env=clean_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"angelia {__version__}"


def test_the_wheel_holds_every_file_of_the_package(angelia: Path, tmp_path: Path) -> None:
    # pyproject.toml lists the packages by hand: a new folder or data file left out of that
    # list would be missing from the wheel, and only from the wheel.
    package = Path(
        installed(angelia, "import json, app; print(json.dumps(app.__file__))", tmp_path)
    )
    shipped = files_below(package.parent)
    expected = {
        f"{inside}/{name}".lstrip("/")
        for folder, inside in SHIPPED.items()
        for name in files_below(REPO / folder)
    }
    assert expected - shipped == set(), "missing from the wheel"
    assert shipped - expected == set(), "in the wheel but not in the checkout"


@pytest.fixture(scope="module")
def served(angelia: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The installed `angelia serve`, started from an empty folder."""
    root = tmp_path_factory.mktemp("installed")
    empty = root / "cwd"
    empty.mkdir()
    # No --host: the installed command picks this install's own loopback address.
    server = ServerProcess(
        root / "data",
        root,
        command=[str(angelia)],
        cwd=empty,
        env=clean_env(root / "home"),
        host=None,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def session_id(served: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A profile and a session made through the JSON API: they need the migrated tables."""
    project = tmp_path_factory.mktemp("project")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=30) as client:
        body = {"name": "installed", "backend": "claude", "cwd": str(project)}
        profile = client.post("/api/profiles", json=body)
        assert profile.status_code == 201, profile.text
        chat = client.post("/api/sessions", json={"profile_id": profile.json()["id"]})
        assert chat.status_code == 201, chat.text
        sid: str = chat.json()["id"]
        return sid


def test_health(served: ServerProcess) -> None:
    assert not served.url.startswith("http://127.0.0.1:"), served.url
    r = httpx.get(f"{served.url}/api/health", timeout=30)
    assert r.status_code == 200
    assert r.json() == {"ok": True, "version": __version__}


async def test_profile_and_session_are_stored(served: ServerProcess, session_id: str) -> None:
    async with served.client() as client:
        chat = (await client.get(f"/api/sessions/{session_id}")).json()
        profile = (await client.get(f"/api/profiles/{chat['profile_id']}")).json()
        listed = (await client.get("/api/sessions")).json()
    assert chat["id"] == session_id
    assert profile["name"] == "installed"
    assert session_id in [s["id"] for s in listed]


def static_links(html: str) -> set[str]:
    tags = BeautifulSoup(html, "html.parser").find_all(True)
    links = {str(tag.get(attr)) for tag in tags for attr in ("src", "href") if tag.get(attr)}
    return {link for link in links if link.startswith("/static/")}


@pytest.mark.parametrize(
    "page", ["/", "/sessions", "/sessions/{sid}", "/welcome", "/profiles/new", "/docs"]
)
async def test_page_and_the_static_files_it_links(
    served: ServerProcess, session_id: str, page: str
) -> None:
    async with served.client() as client:
        r = await client.get(page.format(sid=session_id))
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/html")
        links = static_links(r.text)
        assert links, f"{page} links no /static/ file"
        for link in sorted(links):
            asset = await client.get(link)
            assert asset.status_code == 200, link
            source = REPO / "static" / link.removeprefix("/static/")
            assert asset.content == source.read_bytes(), f"{link} differs from {source}"


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children, …)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found += children
        frontier += children
    return [p for p in found if pid_alive(p)]


async def follow(client: httpx.AsyncClient, url: str, connected: asyncio.Event) -> None:
    """Hold an SSE stream open, setting ``connected`` once a first event has arrived."""
    try:
        async with client.stream("GET", url) as resp:
            assert resp.status_code == 200, resp.status_code
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    connected.set()
    except httpx.TransportError:
        pass  # the server went away: that is the point


async def seconds_until_exit(proc: subprocess.Popen[bytes], limit: float) -> float | None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while loop.time() - start < limit:
        if proc.poll() is not None:
            return loop.time() - start
        await asyncio.sleep(0.01)
    return None


async def still_running(pids: list[int], within: float) -> list[int]:
    """Those of ``pids`` still running ``within`` seconds from now: a child that its parent's
    death kills (PR_SET_PDEATHSIG) takes the kernel a moment to finish off."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while (alive := [p for p in pids if pid_alive(p)]) and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return alive


@pytest.mark.parametrize(
    ("sig", "stream"),
    [
        (signal.SIGINT, "/api/sessions/{sid}/stream"),
        (signal.SIGTERM, "/sessions/{sid}/live"),
    ],
    ids=["SIGINT-api-stream", "SIGTERM-page-stream"],
)
async def test_stops_promptly_with_a_stream_open(
    angelia: Path,
    tmp_path: Path,
    fake_claude: dict[str, Any],
    sig: signal.Signals,
    stream: str,
) -> None:
    """Ctrl-C or a service manager's SIGTERM ends the server at once, backend and all,
    even while a browser tab holds a live stream open."""
    (tmp_path / "cwd").mkdir()
    project = tmp_path / "project"
    project.mkdir()
    server = ServerProcess(
        tmp_path / "data",
        tmp_path,
        command=[str(angelia)],
        cwd=tmp_path / "cwd",
        env=clean_env(tmp_path / "home"),
    ).start()
    proc = server.proc
    assert proc is not None
    try:
        async with server.client() as client:
            sid = await make_session(client, project, fake_claude)
            await send(client, sid, "hello")
            await wait_for_events(client, sid, count("turn_end"))
            children = descendants(proc.pid)
            assert children, "the backend should be running between turns"
            connected = asyncio.Event()
            reader = asyncio.create_task(follow(client, stream.format(sid=sid), connected))
            await asyncio.wait_for(connected.wait(), timeout=30)
            os.kill(proc.pid, sig)
            took = await seconds_until_exit(proc, HANG_WATCH_S)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        # Leaving the block closed the client: a server still running may stop now.
        late = None if took is not None else await seconds_until_exit(proc, 10)
        left = await still_running(children, within=1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    if took is None:
        after = "not even then" if late is None else f"{late:.2f} s after the SSE client left"
        pytest.fail(
            f"still running {HANG_WATCH_S:.0f} s after {sig.name} with an SSE client "
            f"connected; stopped {after}"
        )
    print(f"stopped {took:.2f} s after {sig.name}", file=sys.stderr)
    assert took <= STOP_LIMIT_S, f"took {took:.2f} s to stop after {sig.name}"
    assert left == [], f"processes left running after the server stopped: {left}"
    assert "Traceback" not in server.log(), server.log()
