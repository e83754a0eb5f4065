"""History benchmark: serving a long stored transcript, and searching many events.

    .venv/bin/python bench/history.py
    .venv/bin/python bench/history.py --events 10000 --total 100000 --repeat 30

It fills a fresh data dir through the app's own ``EventLog.append`` (so the search index
is written the way the app writes it): one session of ``--events`` events and others up to
``--total``, with a realistic mix of kinds (user and assistant messages, streamed deltas,
tool calls and results, thinking, turn ends). Then it starts ``angelia serve`` on that data
dir and times, from an HTTP client on 127.0.0.1:

* the transcript page ``/sessions/{id}`` (opens at the tail) and the page above it
  (``/sessions/{id}/earlier``);
* the API's first and next page of events, oldest and newest first;
* ``/api/search`` for a common word, a rare word, a prefix, and within one session;
* ``/api/usage`` summed per day and per model over every turn, and the ``/usage`` page;
* the History page and ``/api/claude/live`` with ``--transcripts`` Claude Code transcripts
  in the projects folder, 20 of them written lately (the History page lists those).

Run inside ``.ci/in-netns`` for a loopback-only network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOKEN = "bench-token-0123456789"
TARGET_PAGE_MS = 300.0
TARGET_SEARCH_MS = 100.0
TARGET_USAGE_MS = 50.0
WORDS = (  # noqa: SIM905 (a word list reads better as one string)
    "the a to of and in is that for it with as on this be are by file function test error "
    "value return import module class session event server client request response token "
    "stream parse build check run install path config update change line code python data"
).split()
RARE = "zanzibarquux"


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


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def turn_events(rng: random.Random, turn: int) -> list[tuple[str, dict[str, Any]]]:
    """About 25 events: what one agent turn with a tool call stores."""
    mid = f"msg_{turn:06d}"
    text = sentence(rng, 60)
    out: list[tuple[str, dict[str, Any]]] = [
        ("user_message", {"text": sentence(rng, 15)}),
        ("status", {"status": "working"}),
        ("thought", {"text": sentence(rng, 30), "message_id": mid + "t"}),
    ]
    step = max(1, len(text) // 12)
    out += [
        ("text_delta", {"text": text[i : i + step], "message_id": mid})
        for i in range(0, len(text), step)
    ]
    out.append(("assistant_message", {"text": text, "message_id": mid}))
    tcid = f"toolu_{turn:06d}"
    command = f"grep -rn {rng.choice(WORDS)} src/"
    out.append(
        (
            "tool_call",
            {
                "tool_call_id": tcid,
                "tool": "Bash",
                "title": command,
                "input": {"command": command, "description": sentence(rng, 6)},
                "tool_kind": "execute",
            },
        )
    )
    lines = "\n".join(f"src/{rng.choice(WORDS)}.py:{i}: {sentence(rng, 8)}" for i in range(20))
    out.append(("tool_result", {"tool_call_id": tcid, "output": lines, "is_error": False}))
    out.append(("assistant_message", {"text": sentence(rng, 40), "message_id": mid + "b"}))
    out.append(
        (
            "turn_end",
            {
                "stop_reason": "success",
                "is_error": False,
                "cost_usd": 0.01,
                "duration_ms": 1234,
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "model": rng.choice(("claude-sonnet", "claude-opus", "claude-haiku")),
                "result": "",
                "errors": [],
            },
        )
    )
    out.append(("status", {"status": "live"}))
    return out


def fill(data_dir: Path, events: int, total: int, seed: int) -> tuple[str, float]:
    """Create the sessions; returns the long session's id and the seconds it took."""
    from app.db.engine import open_database
    from app.schemas import ProfileCreate
    from app.services.store import store
    from app.services.store.eventlog import EventLog

    rng = random.Random(seed)
    engine = open_database(data_dir)
    log = EventLog(engine)
    profile = store.create_profile(
        engine, data=ProfileCreate(name="bench", backend="claude", cwd=str(data_dir))
    )
    started = time.perf_counter()
    long_id = ""
    written = 0
    index = 0
    while written < total:
        chat = store.create_session(engine, profile_id=profile.id, title=f"session {index}")
        long_id = long_id or chat.id
        budget = min(events, total - written)
        turn = 0
        count = 0
        while count < budget:
            for kind, payload in turn_events(rng, turn):
                if count >= budget:
                    break
                if kind == "tool_result" and rng.random() < 0.002:
                    payload = {**payload, "output": payload["output"] + f" {RARE}"}
                log.append(chat.id, kind, payload)
                count += 1
            turn += 1
        written += count
        index += 1
    engine.dispose()
    return long_id, time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(data_dir: Path, log_path: Path, claude_config: Path) -> Iterator[str]:
    """``angelia serve`` on ``data_dir`` until the block ends; yields its base URL."""
    import httpx

    port = free_port()
    env = {**os.environ, "ANGELIA_TOKEN": TOKEN, "CLAUDE_CONFIG_DIR": str(claude_config)}
    env.pop("ANGELIA_DATA_DIR", None)
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            # 127.0.0.1 explicitly: by default the server picks an address of its own.
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1"]
            + ["--port", str(port), "--data-dir", str(data_dir), "--no-browser"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=log,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            yield base
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


RECENT_TRANSCRIPTS = 20


def write_transcripts(claude_config: Path, count: int) -> None:
    """``count`` small transcripts in 50 project folders; all but 20 written days ago."""
    old = time.time() - 3 * 86400
    for n in range(count):
        folder = claude_config / "projects" / f"-srv-project-{n % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{n:08d}-0000-4000-8000-000000000000.jsonl"
        entry = {
            "type": "user",
            "uuid": f"u{n}",
            "cwd": f"/srv/project-{n % 50}",
            "message": {"role": "user", "content": f"task number {n}"},
        }
        path.write_text(json.dumps(entry) + "\n")
        if n >= RECENT_TRANSCRIPTS:
            os.utime(path, (old, old))


def timed(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    fn()  # warm caches (SQLite pages, Jinja templates, statement cache)
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {
        "median_ms": statistics.median(samples),
        "p95_ms": samples[max(0, int(len(samples) * 0.95) - 1)],
        "max_ms": samples[-1],
    }


def time_cases(cases: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict[str, float]]:
    """Each case timed ``repeat`` times, a line of figures printed per case."""
    results = {}
    for name, fn in cases.items():
        results[name] = r = timed(fn, repeat)
        say(
            f"{name:<38} median {r['median_ms']:7.1f} ms  p95 {r['p95_ms']:7.1f} ms"
            f"  max {r['max_ms']:7.1f} ms"
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000, help="events in the long session")
    parser.add_argument("--total", type=int, default=100_000, help="events in all sessions")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--transcripts", type=int, default=5_000, help="Claude Code transcripts on disk"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import httpx

    say(machine())
    with tempfile.TemporaryDirectory(prefix="angelia-history-") as tmp:
        data_dir = Path(tmp) / "data"
        long_id, fill_s = fill(data_dir, args.events, args.total, args.seed)
        say(f"filled {args.total:,} events ({args.events:,} in one session) in {fill_s:.1f} s")
        say(f"database {sum(f.stat().st_size for f in data_dir.iterdir()) / 2**20:.1f} MiB")
        claude_config = Path(tmp) / "claude-config"
        write_transcripts(claude_config, args.transcripts)
        results: dict[str, dict[str, float]] = {}
        with (
            serving(data_dir, Path(tmp) / "server.log", claude_config) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
            ) as c,
        ):

            def get(url: str, check: Callable[[httpx.Response], bool] | None = None) -> Any:
                def run() -> httpx.Response:
                    r = c.get(url)
                    r.raise_for_status()
                    assert check is None or check(r), (url, r.text[:200])
                    return r

                return run

            tail = c.get(f"/api/sessions/{long_id}/events?limit=300&tail=true").json()
            first_seq = tail["events"][0]["seq"]
            cases: dict[str, Callable[[], Any]] = {
                "transcript page (tail 300)": get(
                    f"/sessions/{long_id}", lambda r: 'id="transcript"' in r.text
                ),
                "transcript: the page above": get(
                    f"/sessions/{long_id}/earlier?before={first_seq}",
                    lambda r: "data-seq" in r.text,
                ),
                "API events: first page (oldest 300)": get(
                    f"/api/sessions/{long_id}/events?limit=300",
                    lambda r: len(r.json()["events"]) == 300,
                ),
                "API events: next page": get(
                    f"/api/sessions/{long_id}/events?after=300&limit=300",
                    lambda r: r.json()["events"][0]["seq"] == 301,
                ),
                "API events: newest 300": get(
                    f"/api/sessions/{long_id}/events?limit=300&tail=true",
                    lambda r: len(r.json()["events"]) == 300,
                ),
                "search: common word": get("/api/search?q=session", lambda r: len(r.json()) == 50),
                "search: rare word": get(f"/api/search?q={RARE}", lambda r: len(r.json()) > 0),
                "search: prefix": get("/api/search?q=respo", lambda r: len(r.json()) > 0),
                "search: two words": get("/api/search?q=parse+token", lambda r: len(r.json()) > 0),
                "search: in one session": get(
                    f"/api/search?q=module&session_id={long_id}", lambda r: len(r.json()) > 0
                ),
                "usage API: per day, all time": get(
                    "/api/usage?group=day", lambda r: r.json()["total"]["turns"] > 0
                ),
                "usage API: per model, all time": get(
                    "/api/usage?group=model", lambda r: len(r.json()["groups"]) == 3
                ),
                "usage page (30 days)": get("/usage", lambda r: "cost-chart" in r.text),
                f"history page ({args.transcripts:,} transcripts)": get(
                    "/sessions", lambda r: 'id="terminal-sessions"' in r.text
                ),
                "terminal sessions API": get(
                    "/api/claude/live?minutes=60",
                    lambda r: len(r.json()) == min(RECENT_TRANSCRIPTS, args.transcripts),
                ),
            }
            results.update(time_cases(cases, args.repeat))

    page = max(v["p95_ms"] for k, v in results.items() if k.startswith("transcript"))
    search = max(v["p95_ms"] for k, v in results.items() if k.startswith("search"))
    usage = max(v["p95_ms"] for k, v in results.items() if k.startswith("usage API"))
    ok = page < TARGET_PAGE_MS and search < TARGET_SEARCH_MS and usage < TARGET_USAGE_MS
    if args.json:
        args.json.write_text(json.dumps({"fill_s": fill_s, "results": results}, indent=2))
    say(
        f"\nSUMMARY history: transcript pages p95 <= {page:.0f} ms (< {TARGET_PAGE_MS:.0f}), "
        f"search over {args.total:,} events p95 <= {search:.0f} ms (< {TARGET_SEARCH_MS:.0f}), "
        f"usage API p95 <= {usage:.0f} ms (< {TARGET_USAGE_MS:.0f}) -> {'MET' if ok else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
