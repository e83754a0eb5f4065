"""Per-turn latency of real agent CLIs behind Angelia, against the scripted fake model server.

    .ci/in-netns .venv/bin/python bench/turn_latency.py                    # 5 runs each
    .ci/in-netns .venv/bin/python bench/turn_latency.py --runs 3 --backends gemini
    .ci/in-netns .venv/bin/python bench/turn_latency.py --env GEMINI_CLI_NO_RELAUNCH=true

For each backend (``claude``, ``gemini``, ``claude-acp``, ``grok``) an in-process Angelia server
gets one profile running the pinned CLI (the paths ``.ci/setup`` writes to ``.venv/ci.env``, or
``ANGELIA_*_BIN``) against a fake model on 127.0.0.1 that answers at once. Each run is a
new chat session of that profile, timed from the ``POST`` of a message to its ``turn_end``
on the session's SSE stream:

* first: the first message, so it includes starting the CLI and opening its session;
* next: a second message to the same, already running process;

plus the time from the first ``POST`` to the first streamed text. The fake model costs
about a millisecond a call, so what is left is the CLI's own overhead and Angelia's; a real
model adds its own time on top. Medians over the runs (and min-max) are printed as a
Markdown table. Run it inside ``.ci/in-netns`` so nothing can leave the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from tests.fakes.fake_model_server import FakeModelServer, start_fake_model_server  # noqa: E402

TOKEN = "bench-token-0123456789"
CACHE = Path(os.environ.get("ANGELIA_CLI_CACHE") or Path.home() / ".cache" / "angelia-clis")
BINARIES = {
    "claude": (
        "ANGELIA_CLAUDE_BIN",
        CACHE / "claude-code-2.1.332" / "node_modules" / ".bin" / "claude",
    ),
    "gemini": (
        "ANGELIA_GEMINI_BIN",
        CACHE / "gemini-cli-0.61.0" / "node_modules" / ".bin" / "gemini",
    ),
    "claude-acp": (
        "ANGELIA_CLAUDE_ACP_BIN",
        CACHE / "claude-agent-acp-0.101.0" / "node_modules" / ".bin" / "claude-agent-acp",
    ),
    "grok": (
        "ANGELIA_GROK_BIN",
        CACHE / "grok-cli-bin-0.2.111" / "grok_cli_bin" / "bin" / "grok",
    ),
}


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def ci_env() -> dict[str, str]:
    """``.venv/ci.env`` as a dict (empty if ``.ci/setup`` has not run)."""
    path = REPO / ".venv" / "ci.env"
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def binary(backend: str) -> Path:
    variable, default = BINARIES[backend]
    configured = os.environ.get(variable) or ci_env().get(variable)
    return Path(configured) if configured else default


def agent_env(
    backend: str, fake: FakeModelServer, home: Path, extra: dict[str, str]
) -> dict[str, str]:
    """The same complete environment the real-CLI tests give each agent."""
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(home)}
    if backend == "gemini":
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        settings = {
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "ide": {"enabled": False},
        }
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env.update(GEMINI_API_KEY="fake-key", GOOGLE_GEMINI_BASE_URL=fake.url)
    elif backend == "grok":
        env.update(
            XAI_API_KEY="xai-fake",
            GROK_MODELS_BASE_URL=f"{fake.url}/v1",
            GROK_FOLDER_TRUST="0",
            GROK_DISABLE_AUTOUPDATER="1",
            GROK_TELEMETRY_ENABLED="0",
        )
    else:
        env.update(
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-fake",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_MAX_RETRIES="0",
        )
        if backend == "claude-acp" and os.geteuid() == 0:
            # As root the adapter's "auto" start mode is refused without it.
            env["IS_SANDBOX"] = "1"
    env.update(extra)
    return env


def command(backend: str) -> list[str]:
    path = str(binary(backend))
    return [path, "--acp"] if backend == "gemini" else [path]


# -- one in-process server ---------------------------------------------------------------------
class Server:
    def __init__(self, data_dir: Path) -> None:
        # Every run's agent stays up (no idle stop), past the default cap on running ones.
        settings = Settings(
            data_dir=data_dir, token=TOKEN, idle_check_interval_s=3600, max_agents=1000
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port: int = s.getsockname()[1]
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> httpx.AsyncClient:
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            await asyncio.sleep(0.01)
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=60,
        )

    async def __aexit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await asyncio.wait_for(self._task, timeout=60)


# -- timing ------------------------------------------------------------------------------------
@dataclass
class Runs:
    backend: str
    first: list[float] = field(default_factory=list)
    next: list[float] = field(default_factory=list)
    first_text: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def frames(
    client: httpx.AsyncClient, session_id: str, out: asyncio.Queue[tuple[float, dict[str, Any]]]
) -> None:
    """Put every event of the session's SSE stream on ``out`` with its arrival time."""
    async with client.stream("GET", f"/api/sessions/{session_id}/stream") as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                await out.put((time.perf_counter(), json.loads(line[5:])))


async def until(
    queue: asyncio.Queue[tuple[float, dict[str, Any]]],
    done: Callable[[dict[str, Any]], bool],
    seen: list[dict[str, Any]],
) -> float:
    while True:
        at, event = await asyncio.wait_for(queue.get(), 120)
        seen.append(event)
        if event["kind"] == "error":
            raise RuntimeError(event.get("message") or event)
        if done(event):
            return at


async def one_run(client: httpx.AsyncClient, profile_id: str, runs: Runs) -> None:
    r = await client.post("/api/sessions", json={"profile_id": profile_id})
    r.raise_for_status()
    sid = r.json()["id"]
    queue: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()
    reader = asyncio.create_task(frames(client, sid, queue))
    seen: list[dict[str, Any]] = []
    try:
        await asyncio.sleep(0.2)  # let the stream subscribe
        start = time.perf_counter()
        (
            await client.post(f"/api/sessions/{sid}/messages", json={"text": "say hi"})
        ).raise_for_status()
        text_at = await until(queue, lambda e: e["kind"] == "text_delta", seen)
        end = await until(queue, lambda e: e["kind"] == "turn_end", seen)
        runs.first_text.append(text_at - start)
        runs.first.append(end - start)
        start = time.perf_counter()
        (
            await client.post(f"/api/sessions/{sid}/messages", json={"text": "say more"})
        ).raise_for_status()
        runs.next.append(await until(queue, lambda e: e["kind"] == "turn_end", seen) - start)
    except (RuntimeError, TimeoutError) as exc:
        runs.errors.append(f"{exc!s}"[:300] or type(exc).__name__)
    finally:
        reader.cancel()
        await client.delete(f"/api/sessions/{sid}")


async def bench(backend: str, n: int, work: Path, extra: dict[str, str]) -> Runs:
    runs = Runs(backend)
    if not binary(backend).exists():
        runs.errors.append(f"{binary(backend)} is missing (run .ci/setup)")
        return runs
    fake = start_fake_model_server(None, work / f"{backend}-model.jsonl")
    project = work / f"{backend}-project"
    project.mkdir()
    home = work / f"{backend}-home"
    home.mkdir()
    try:
        async with Server(work / f"{backend}-data") as client:
            body = {
                "name": f"bench {backend}",
                "backend": backend,
                "cwd": str(project),
                "command": command(backend),
                "env": agent_env(backend, fake, home, extra),
            }
            r = await client.post("/api/profiles", json=body)
            r.raise_for_status()
            for i in range(n):
                await one_run(client, r.json()["id"], runs)
                say(f"  {backend} run {i + 1}: first {_last(runs.first)} next {_last(runs.next)}")
            await client.aclose()
    finally:
        fake.stop()
    return runs


def _last(values: list[float]) -> str:
    return f"{values[-1]:.2f} s" if values else "-"


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backends", nargs="+", default=list(BINARIES), choices=list(BINARIES))
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="extra agent env"
    )
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    if os.environ.get("ANGELIA_NETNS") != "1":
        say("note: not inside .ci/in-netns; the CLIs could reach the network")
    say(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {args.runs} runs each")
    results = []
    with tempfile.TemporaryDirectory(prefix="angelia-latency-") as tmp:
        for backend in args.backends:
            results.append(await bench(backend, args.runs, Path(tmp), extra))
    say()
    say("| backend | first turn (incl. start-up) | next turn | first text after POST |")
    say("|---|---|---|---|")
    for runs in results:
        say(
            f"| {runs.backend} | {summary(runs.first)} | {summary(runs.next)} "
            f"| {summary(runs.first_text)} |"
        )
    failed = [(r.backend, e) for r in results for e in r.errors]
    for backend, error in failed:
        say(f"{backend}: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
