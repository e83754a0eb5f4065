"""What the relay benchmarks share: the server under test, the fake backends' profiles,
the SSE reader, the pinger and the machine's CPU figures.

``relay.py`` and ``relay_mixed.py`` both import it, and neither imports the other at load.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# The fake CLI (``--fake``) and the pinger (``--ping``) are modes of relay.py, run as processes.
RELAY = Path(__file__).resolve().with_name("relay.py")
TOKEN = "bench-token-0123456789"
TARGET_HEALTH_P99_MS = 20.0  # /api/health while 20 sessions stream saturated
TARGET_P99_MS = 5.0  # paced latency at 20 sessions
PING_INTERVAL_S = 0.01


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def machine() -> str:
    """CPUs, load, and how busy they are before the run (other work skews every figure)."""

    def ticks() -> list[int]:
        return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]

    a = ticks()
    time.sleep(2)
    b = ticks()
    d = [y - x for x, y in zip(a, b, strict=True)]
    busy = 100 * (sum(d) - d[3] - d[4]) / max(sum(d), 1)
    load = Path("/proc/loadavg").read_text().split()[0]
    return f"machine: {os.cpu_count()} CPUs, load average {load}, {busy:.0f}% busy before the run"


# Niceness of the fake backends (--nice): > 0 lets the server win the CPU from them.
FAKE_NICE = 0


def fake_command() -> list[str]:
    nice = ["nice", "-n", str(FAKE_NICE)] if FAKE_NICE else []
    return [*nice, sys.executable, str(RELAY), "--fake"]


def _processes() -> Iterator[tuple[int, int, str]]:
    """Every process now: its pid, its parent's pid and its /proc stat line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        yield int(entry.name), int(stat.rsplit(")", 1)[1].split()[1]), stat


class Server:
    def __init__(
        self, data_dir: Path, port: int, profile: Path | None = None, app_dir: Path = REPO
    ) -> None:
        self.url = f"http://127.0.0.1:{port}"
        # The benches run more agents than the server's default cap on running ones; an
        # older checkout that has no cap ignores the variable.
        env = {**os.environ, "ANGELIA_TOKEN": TOKEN, "ANGELIA_MAX_AGENTS": "1000"}
        env.pop("ANGELIA_DATA_DIR", None)
        self.log_path = data_dir.parent / f"server-{port}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115
        prefix = ["-m", "cProfile", "-o", str(profile)] if profile else []
        self.proc = subprocess.Popen(
            # 127.0.0.1 explicitly: by default the server picks an address of its own.
            [sys.executable, *prefix, "-m", "app.cli", "serve", "--host", "127.0.0.1"]
            + ["--port", str(port), "--data-dir", str(data_dir), "--no-browser"],
            cwd=app_dir,
            env=env,
            stdout=self.log,
            stderr=self.log,
        )

    def rss_kib(self, pid: int | None = None) -> int:
        status = Path(f"/proc/{pid or self.proc.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
        return int(line.split()[1])

    def cpu_ticks(self) -> int:
        """CPU ticks used so far by the server and its live children."""

        def ticks(stat: str) -> int:
            fields = stat.rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])

        return sum(
            ticks(stat) for pid, parent, stat in _processes() if self.proc.pid in (pid, parent)
        )

    def children_rss_kib(self) -> int:
        return sum(self.rss_kib(pid) for pid, parent, _ in _processes() if parent == self.proc.pid)

    def stop(self) -> None:
        # SIGINT: uvicorn shuts down gracefully either way, but after SIGTERM it re-raises
        # the signal, which would kill cProfile before it writes its stats.
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class SessionStats:
    latencies_ms: list[float] = field(default_factory=list)
    # The part of each latency before the event was stored (its ``at``, millisecond
    # resolution): the rest is fan-out, SSE and the client.
    stored_ms: list[float] = field(default_factory=list)
    first: float = 0.0  # time.time() of the first delta's write
    last: float = 0.0  # time.time() of the last delta's receipt
    reconnects: int = 0
    sent: list[float] = field(default_factory=list)


async def read_stream(
    client: Any, sid: str, after: int, stats: SessionStats, ready: asyncio.Event
) -> None:
    """Read the session's SSE stream until its turn ends, reconnecting like EventSource
    (with the last seq) when the server drops a subscriber that fell behind."""
    last = after
    while True:
        async with client.stream("GET", f"/api/sessions/{sid}/stream?after={last}") as resp:
            ready.set()
            data = ""
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    data = line[5:].strip()
                elif line == "" and data:
                    event = json.loads(data)
                    data = ""
                    last = event["seq"]
                    kind = event["kind"]
                    if kind == "text_delta":
                        # One stamp per delta the fake wrote; an app that merges deltas
                        # sends several stamps in one event, each still counted.
                        now = time.time()
                        at = datetime.fromisoformat(event["at"].replace("Z", "+00:00"))
                        for stamp in event["text"].split():
                            sent = float(stamp)
                            stats.latencies_ms.append((now - sent) * 1000)
                            stats.stored_ms.append((at.timestamp() - sent) * 1000)
                            stats.sent.append(sent)
                        # From the fake's first write to the last receipt (wall clock,
                        # one host): a server that holds back its first send cannot
                        # shorten the span.
                        stats.first = min(stats.sent) if not stats.first else stats.first
                        stats.last = now
                    elif kind in ("turn_end", "error"):
                        return
        stats.reconnects += 1


def cpu_snapshot(server: Server) -> tuple[int, int, int]:
    """(all ticks, busy ticks, ticks of this benchmark: server, backends and this client)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    own = os.times()
    hz = os.sysconf("SC_CLK_TCK")
    mine = server.cpu_ticks() + int((own.user + own.system) * hz)
    return sum(fields), sum(fields) - fields[3] - fields[4], mine


def other_cpu_percent(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Share of the machine's CPU time that other work used between two snapshots."""
    total = b[0] - a[0]
    return max(0.0, 100 * ((b[1] - a[1]) - (b[2] - a[2])) / max(total, 1))


def run_pinger(url: str, out: Path) -> None:
    """``--ping``: GET /api/health every 10 ms until SIGTERM, then write the times (ms).

    A process of its own, so the benchmark's busy SSE readers cannot delay the pings."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    times: list[float] = []
    stop = False

    def on_term(_sig: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    while not stop:
        t = time.perf_counter()
        conn.request("GET", "/api/health")
        conn.getresponse().read()
        times.append((time.perf_counter() - t) * 1000)
        time.sleep(PING_INTERVAL_S)
    out.write_text(json.dumps(times))


class Pinger:
    def __init__(self, url: str, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen([sys.executable, str(RELAY), "--ping", url, str(out)])

    def stop(self) -> list[float]:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        times: list[float] = json.loads(self.out.read_text())
        return times


async def wait_ready(client: Any) -> None:
    """Until the server answers, then a second more for its start-up work to settle."""
    import httpx

    for _ in range(300):
        try:
            if (await client.get("/api/health")).status_code == 200:
                break
        except httpx.TransportError:
            await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)


async def fake_profiles(client: Any, work: Path, scenarios: dict[str, Path]) -> dict[str, str]:
    """A profile running the fake backend per scenario; their ids by name."""
    profiles = {}
    for name, scenario in scenarios.items():
        r = await client.post(
            "/api/profiles",
            json={
                "name": name,
                "backend": "claude",
                "cwd": str(work),
                "command": fake_command(),
                "env": {"FAKE_CLAUDE_SCENARIO": str(scenario)},
            },
        )
        r.raise_for_status()
        profiles[name] = r.json()["id"]
    return profiles


async def warm_up(client: Any, sids: list[str]) -> dict[str, int]:
    """Start every backend with a warm-up turn, so process start-up is not timed; returns
    each session's last seq once that turn has ended."""
    await asyncio.gather(
        *(client.post(f"/api/sessions/{sid}/messages", json={"text": "warm"}) for sid in sids)
    )
    after = {}
    for sid in sids:
        for _ in range(600):
            events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
            if any(e["kind"] == "turn_end" for e in events) and events[-1]["kind"] == "status":
                after[sid] = events[-1]["seq"]
                break
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError(f"warm-up turn of {sid} did not end")
    return after
