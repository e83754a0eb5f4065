"""Relay benchmark: how fast streamed text gets from an agent's stdout to SSE clients.

    .venv/bin/python bench/relay.py                 # 1 and 20 sessions
    .venv/bin/python bench/relay.py --sessions 5 --deltas 1000

For each session count N it measures, with a fake ``claude`` that writes text deltas as
fast as it can (each delta's text is the ``time.time()`` of its write):

* raw pipe: N fakes read directly, lines counted in a tight ``select`` loop — the most
  any consumer could take from those pipes on this machine;
* relay: N sessions of a real ``angelia serve`` (a child process), each with an SSE
  client on ``/api/sessions/{id}/stream``; deltas/s that reach the clients (a delta the
  app merged with others still counts once), the ratio to the raw rate, and the latency
  from the fake's write to the client's receipt;
* paced: the same with the fakes writing at a fixed rate below the relay's capacity, so
  the latency is the per-event cost rather than queueing;
* memory: the server's RSS before the sessions and with N live sessions.

``--mixed`` runs ``relay_mixed.py`` instead: 19 paced sessions beside one that writes a
20 MB line or streams flat out. Run inside ``.ci/in-netns`` for a loopback-only network.
``--append-only`` instead times
just the storage step (the app's ``EventLog.append`` against bare sqlite3). With ``--fake``
this file is the fake CLI itself (used by the benchmark; not meant to be run by hand).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import relay_parts
from relay_parts import (
    REPO,
    TARGET_HEALTH_P99_MS,
    TARGET_P99_MS,
    TOKEN,
    Pinger,
    Server,
    SessionStats,
    cpu_snapshot,
    fake_command,
    fake_profiles,
    free_port,
    machine,
    other_cpu_percent,
    read_stream,
    run_pinger,
    say,
    wait_ready,
    warm_up,
)

TARGET_RATIO = 0.5  # relay / raw pipe, 1 session, saturated


def run_fake(argv: list[str]) -> None:
    sys.path.insert(0, str(REPO))
    from tests.fakes.fake_claude import FakeClaude

    class StampingClaude(FakeClaude):
        """Adds ``{"burst": n, "interval": s}``: n deltas stamped with their write time;
        ``{"flood_s": s}``: such deltas as fast as possible for s seconds;
        ``{"tool_result_mb": m}``: one tool result line of m MB."""

        def step(self, step: dict[str, Any]) -> str | bool | None:
            if "tool_result_mb" in step:
                return self.tool_result(float(step["tool_result_mb"]))
            if "flood_s" in step:
                return self.deltas(10**9, 0.0, until=time.monotonic() + float(step["flood_s"]))
            if "burst" not in step:
                return super().step(step)
            return self.deltas(int(step["burst"]), float(step.get("interval", 0)))

        def tool_result(self, megabytes: float) -> str:
            """A ``cat`` of a big text file: a Read tool call whose result is one line of
            ``megabytes`` MB on stdout (the file's newlines escaped inside it)."""
            call_id = self.next_id("toolu")
            block = {"type": "tool_use", "id": call_id, "name": "Read", "input": {"path": "x"}}
            self.out(self.assistant(self.next_id("msg"), block))
            row = "the quick brown fox jumps over the lazy dog, once more with feeling\n"
            text = row * int(megabytes * 1e6 / (len(row) + 1))
            self.out(self.user([{"type": "tool_result", "tool_use_id": call_id, "content": text}]))
            return f"read {len(text)} characters"

        def deltas(self, count: int, interval: float, until: float = float("inf")) -> str:
            message_id = self.next_id("msg")
            self.stream({"type": "message_start", "message": {"id": message_id}})
            write = sys.stdout.write
            flush = sys.stdout.flush
            head = (
                '{"type":"stream_event","event":{"type":"content_block_delta","index":0,'
                '"delta":{"type":"text_delta","text":"'
            )
            tail = '"}},"parent_tool_use_id":null,"session_id":"' + self.session_id + '"}\n'
            next_at = time.monotonic()
            for written in range(count):
                if written % 1000 == 0 and time.monotonic() > until:
                    count = written
                    break
                if interval:
                    next_at += interval
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                write(f"{head}{time.time():.6f} {tail}")
                flush()
            text = f"{count} deltas"
            self.out(self.assistant(message_id, {"type": "text", "text": text}))
            self.stream({"type": "message_stop"})
            return text

    StampingClaude(argv).run()


def scenario_file(directory: Path, deltas: int, interval: float, *, warm_up: bool) -> Path:
    """One burst turn, after a short warm-up turn if ``warm_up``."""
    path = directory / f"scenario-{deltas}-{interval}-{warm_up}.json"
    turns: list[list[dict[str, Any]]] = [[{"burst": deltas, "interval": interval}]]
    if warm_up:
        turns.insert(0, [{"text": "warm"}])
    path.write_text(json.dumps({"turns": turns}))
    return path


# -- raw pipe -------------------------------------------------------------------------------


def raw_pipe(n: int, deltas: int, scenario: Path, *, parse: bool = False) -> float:
    """Delta lines per second read from ``n`` fakes at once in a tight loop (and, with
    ``parse``, each line decoded with ``json.loads`` — the least any consumer does)."""
    env = {**os.environ, "FAKE_CLAUDE_SCENARIO": str(scenario)}
    procs = [
        subprocess.Popen(
            fake_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
        )
        for _ in range(n)
    ]
    time.sleep(0.5)  # let them all start before timing
    message = json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + "\n"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(message.encode())
    fds = {p.stdout.fileno(): p for p in procs if p.stdout is not None}
    counts = dict.fromkeys(fds, 0)
    marker = b'"text_delta"'
    done: set[int] = set()
    first = last = 0.0
    pending = dict.fromkeys(fds, b"")
    while len(done) < len(fds):
        ready, _, _ = select.select([fd for fd in fds if fd not in done], [], [], 10)
        if not ready:
            raise RuntimeError("raw pipe stalled")
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                done.add(fd)
                continue
            data = pending[fd] + chunk
            lines = data.split(b"\n")
            pending[fd] = lines.pop()
            for line in lines:
                if parse and line:
                    json.loads(line)
                if marker in line:
                    now = time.perf_counter()
                    first = first or now
                    last = now
                    counts[fd] += 1
                elif line.startswith(b'{"type": "result"'):
                    done.add(fd)
    for p in procs:
        p.kill()
        p.wait()
    total = sum(counts.values())
    assert total == n * deltas, (total, n * deltas)
    return total / (last - first)


# -- the app ----------------------------------------------------------------------------------


@dataclass
class RelayResult:
    rate: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    events: int
    reconnects: int
    health_ms: dict[str, float]
    other_cpu_percent: float
    stored_p50_ms: float
    stored_p99_ms: float


async def relay(
    server: Server, client: Any, profile: str, n: int, deltas: int, dump: Path | None = None
) -> tuple[RelayResult, list[str]]:
    sids = []
    for _ in range(n):
        r = await client.post("/api/sessions", json={"profile_id": profile})
        r.raise_for_status()
        sids.append(r.json()["id"])
    after = await warm_up(client, sids)
    stats = [SessionStats() for _ in sids]
    readies = [asyncio.Event() for _ in sids]
    readers = [
        asyncio.create_task(read_stream(client, sid, after[sid], st, ev))
        for sid, st, ev in zip(sids, stats, readies, strict=True)
    ]
    await asyncio.gather(*(e.wait() for e in readies))
    pinger = Pinger(server.url, server.log_path.with_suffix(f".pings-{n}-{time.time_ns()}.json"))
    before = cpu_snapshot(server)
    await asyncio.gather(
        *(client.post(f"/api/sessions/{sid}/messages", json={"text": "go"}) for sid in sids)
    )
    await asyncio.wait_for(asyncio.gather(*readers), timeout=600)
    pings = sorted(pinger.stop())
    other = other_cpu_percent(before, cpu_snapshot(server))
    lat = sorted(x for s in stats for x in s.latencies_ms)
    stored = sorted(x for s in stats for x in s.stored_ms)
    q_stored = statistics.quantiles(stored, n=100)
    total = len(lat)
    assert total == n * deltas, (total, n * deltas)
    span = max(s.last for s in stats) - min(s.first for s in stats)
    q = statistics.quantiles(lat, n=100)
    reconnects = sum(s.reconnects for s in stats)
    q_health = (
        statistics.quantiles(pings, n=100, method="inclusive") if len(pings) > 1 else [0.0] * 99
    )
    health = {"p50": q_health[49], "p99": q_health[98], "max": pings[-1], "n": len(pings)}
    if dump:
        rows = [
            (t, x, i)
            for i, s in enumerate(stats)
            for t, x in zip(s.sent, s.latencies_ms, strict=True)
        ]
        with open(dump, "a") as f:
            f.write(json.dumps({"n": n, "rows": rows}) + "\n")
    result = RelayResult(
        total / span,
        q[49],
        q[98],
        lat[-1],
        total,
        reconnects,
        health,
        other,
        q_stored[49],
        q_stored[98],
    )
    return result, sids


async def run_count(
    n: int,
    deltas: int,
    paced_deltas: int,
    paced_interval: float,
    work: Path,
    profile: Path | None = None,
    dump: Path | None = None,
    app_dir: Path = REPO,
    raw: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One session count against the app in ``app_dir``; ``raw`` reuses pipe figures."""
    import httpx

    fast = scenario_file(work, deltas, 0.0, warm_up=True)
    paced = scenario_file(work, paced_deltas, paced_interval, warm_up=True)
    if raw is None:
        raw_scenario = scenario_file(work, deltas, 0.0, warm_up=False)
        raw = (raw_pipe(n, deltas, raw_scenario), raw_pipe(n, deltas, raw_scenario, parse=True))
    raw_rate, raw_parsed = raw

    data = work / f"data-{n}-{time.time_ns()}"
    server = Server(data, free_port(), profile, app_dir)
    try:
        async with httpx.AsyncClient(
            base_url=server.url,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=httpx.Timeout(600, connect=5),
            limits=httpx.Limits(max_connections=4 * n + 10),
        ) as client:
            await wait_ready(client)
            rss_before = server.rss_kib()
            profiles = await fake_profiles(client, work, {"fast": fast, "paced": paced})
            # Paced first: a freshly started server, no earlier burst or deletion whose
            # WAL checkpoints could land in the measurement.
            paced_result, sids = await relay(
                server, client, profiles["paced"], n, paced_deltas, dump
            )
            await asyncio.sleep(1.0)
            rss_after = server.rss_kib()
            children = server.children_rss_kib()
            for sid in sids:  # stop these backends before the saturated run
                await client.delete(f"/api/sessions/{sid}")
            await asyncio.sleep(1.0)
            fast_result, _ = await relay(server, client, profiles["fast"], n, deltas)
    finally:
        server.stop()
    return {
        "app": str(app_dir),
        "sessions": n,
        "deltas_per_session": deltas,
        "raw_pipe_events_per_s": raw_rate,
        "raw_pipe_parsed_events_per_s": raw_parsed,
        "relay_events_per_s": fast_result.rate,
        "ratio": fast_result.rate / raw_rate,
        "sse_reconnects": fast_result.reconnects,
        "health_ms_saturated": fast_result.health_ms,
        "other_cpu_percent_saturated": fast_result.other_cpu_percent,
        "other_cpu_percent_paced": paced_result.other_cpu_percent,
        "health_ms_paced": paced_result.health_ms,
        "saturated_latency_ms": {
            "p50": fast_result.p50_ms,
            "p99": fast_result.p99_ms,
            "max": fast_result.max_ms,
        },
        "paced_events_per_s_per_session": 1 / paced_interval,
        "paced_latency_ms": {
            "p50": paced_result.p50_ms,
            "p99": paced_result.p99_ms,
            "max": paced_result.max_ms,
            "until_stored_p50": paced_result.stored_p50_ms,
            "until_stored_p99": paced_result.stored_p99_ms,
        },
        "server_rss_mib": {"before": rss_before / 1024, "after": rss_after / 1024},
        "server_rss_per_session_kib": (rss_after - rss_before) / n,
        "backend_rss_per_session_mib": children / n / 1024,
    }


def report(result: dict[str, Any]) -> None:
    n = result["sessions"]
    sat = result["saturated_latency_ms"]
    paced = result["paced_latency_ms"]
    say(f"\n== {n} session(s), {result['deltas_per_session']} deltas each; app {result['app']} ==")
    say(f"raw pipe        {result['raw_pipe_events_per_s']:>10,.0f} events/s")
    parsed = result["raw_pipe_parsed_events_per_s"]
    say(
        f"raw + json.loads{parsed:>10,.0f} events/s"
        f"   (relay / this: {result['relay_events_per_s'] / parsed:.2f})"
    )
    say(
        f"relay to SSE    {result['relay_events_per_s']:>10,.0f} events/s"
        f"   ratio {result['ratio']:.2f} (target >= {TARGET_RATIO});"
        f" SSE clients dropped and reconnected: {result['sse_reconnects']}"
    )
    say(
        f"latency, saturated      p50 {sat['p50']:8.1f} ms  p99 {sat['p99']:8.1f} ms"
        f"  max {sat['max']:8.1f} ms"
    )
    say(
        f"latency, paced {result['paced_events_per_s_per_session']:.0f}/s/session"
        f"  p50 {paced['p50']:8.2f} ms  p99 {paced['p99']:8.2f} ms  max {paced['max']:8.1f} ms"
    )
    say(
        f"  of which until appended ('at', 1 ms steps)  p50 {paced['until_stored_p50']:8.2f} ms"
        f"  p99 {paced['until_stored_p99']:8.2f} ms"
    )
    h = result["health_ms_saturated"]
    say(
        f"/api/health while streaming saturated: p50 {h['p50']:.1f} ms  p99 {h['p99']:.1f} ms"
        f"  max {h['max']:.1f} ms ({h['n']} pings); paced max"
        f" {result['health_ms_paced']['max']:.1f} ms"
    )
    say(
        f"other work on this machine meanwhile: {result['other_cpu_percent_saturated']:.0f}% "
        f"of its CPU time (saturated), {result['other_cpu_percent_paced']:.0f}% (paced)"
    )
    rss = result["server_rss_mib"]
    say(
        f"server RSS      {rss['before']:.1f} MiB -> {rss['after']:.1f} MiB"
        f"  ({result['server_rss_per_session_kib']:.0f} KiB per session;"
        f" each fake backend {result['backend_rss_per_session_mib']:.1f} MiB)"
    )


def append_costs(count: int = 5000) -> None:
    """Where a relayed event's time goes in storage: the app's append vs bare sqlite3."""
    sys.path.insert(0, str(REPO))
    import sqlite3

    from app.db.engine import open_database
    from app.schemas import ProfileCreate
    from app.services.store import store
    from app.services.store.eventlog import EventLog

    with tempfile.TemporaryDirectory(prefix="angelia-append-") as tmp:
        data = Path(tmp)
        engine = open_database(data)
        profile = store.create_profile(
            engine, data=ProfileCreate(name="p", backend="claude", cwd=str(data))
        )
        sid = store.create_session(engine, profile_id=profile.id, title="t").id
        log = EventLog(engine)
        payload = {"text": "1796223877.244788 ", "message_id": "msg_0001"}

        async def appended() -> tuple[float, float, int]:
            """(event-loop time per append, time until all are stored, commits)."""
            t = time.perf_counter()
            for _ in range(count):
                log.append(sid, "text_delta", payload)
            on_loop = time.perf_counter() - t
            await log.flush()
            stored = time.perf_counter() - t
            commits = log.writer.commits
            await log.close()
            return on_loop / count * 1e6, stored / count * 1e6, commits

        loop_us, app_us, commits = asyncio.run(appended())
        engine.dispose()

        con = sqlite3.connect(data / "angelia.db", isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        sql = (
            "INSERT INTO event (session_id, seq, kind, payload, created_at) "
            "VALUES (?, ?, 'text_delta', ?, '2026-01-01 00:00:00')"
        )
        body = json.dumps(payload)
        t = time.perf_counter()
        for i in range(count):
            con.execute("BEGIN")
            con.execute(sql, (sid, 10**6 + i, body))
            con.execute("COMMIT")
        txn_us = (time.perf_counter() - t) / count * 1e6
        t = time.perf_counter()
        con.execute("BEGIN")
        for i in range(count):
            con.execute(sql, (sid, 2 * 10**6 + i, body))
        con.execute("COMMIT")
        batch_us = (time.perf_counter() - t) / count * 1e6
        con.close()
    say(f"EventLog.append, on the event loop                       {loop_us:7.1f} us/event")
    say(f"EventLog.append until stored ({commits} commits)           {app_us:7.1f} us/event")
    say(f"sqlite3 INSERT, one transaction each                     {txn_us:7.1f} us/event")
    say(f"sqlite3 INSERT, {count} in one transaction               {batch_us:7.1f} us/event")
    say(
        f"SUMMARY append: {loop_us:.1f} us/event on the event loop, {app_us:.1f} us/event "
        f"until stored ({app_us / txn_us:.2f}x bare sqlite3 per transaction, "
        f"{app_us / batch_us:.1f}x bare batched)"
    )


def side_by_side(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> None:
    """The figures of both apps, measured in this one run, next to each other."""
    say("\n== before / after (same machine, same run) ==")
    say(f"before: {before[0]['app']}\nafter:  {after[0]['app']}")
    for a, b in zip(after, before, strict=True):
        n = a["sessions"]
        rows = [
            ("raw pipe, events/s", b["raw_pipe_events_per_s"], a["raw_pipe_events_per_s"], ",.0f"),
            ("relay, events/s", b["relay_events_per_s"], a["relay_events_per_s"], ",.0f"),
            ("relay / raw pipe", b["ratio"], a["ratio"], ".2f"),
            (
                "health p99 ms (sat.)",
                b["health_ms_saturated"]["p99"],
                a["health_ms_saturated"]["p99"],
                ".1f",
            ),
            (
                "health max ms (sat.)",
                b["health_ms_saturated"]["max"],
                a["health_ms_saturated"]["max"],
                ".1f",
            ),
            ("paced p50 ms", b["paced_latency_ms"]["p50"], a["paced_latency_ms"]["p50"], ".2f"),
            ("paced p99 ms", b["paced_latency_ms"]["p99"], a["paced_latency_ms"]["p99"], ".2f"),
            (
                "saturated p50 ms",
                b["saturated_latency_ms"]["p50"],
                a["saturated_latency_ms"]["p50"],
                ".1f",
            ),
        ]
        say(f"-- {n} session(s) --{'before':>14} {'after':>14}")
        for label, x, y, fmt in rows:
            say(f"{label:<24}{x:>14{fmt}} {y:>14{fmt}}")


def verdict(results: list[dict[str, Any]]) -> str:
    one = next((r for r in results if r["sessions"] == 1), None)
    many = max(results, key=lambda r: r["sessions"])
    parts = []
    ok = True
    if one is not None:
        ok &= one["ratio"] >= TARGET_RATIO
        parts.append(f"1 session ratio {one['ratio']:.2f} (>= {TARGET_RATIO})")
    health = many["health_ms_saturated"]["p99"]
    paced = many["paced_latency_ms"]["p99"]
    ok &= health <= TARGET_HEALTH_P99_MS and paced <= TARGET_P99_MS
    parts.append(
        f"{many['sessions']} sessions: /api/health p99 {health:.1f} ms (<= "
        f"{TARGET_HEALTH_P99_MS:g}), paced p99 {paced:.2f} ms (<= {TARGET_P99_MS:g})"
    )
    return "; ".join(parts) + f" -> {'MET' if ok else 'MISSED'}"


def main() -> int:
    if "--append-only" in sys.argv:
        append_costs()
        return 0
    if "--fake" in sys.argv:
        run_fake([a for a in sys.argv[1:] if a != "--fake"])
        return 0
    if "--mixed" in sys.argv:
        from relay_mixed import main as mixed

        return mixed([a for a in sys.argv[1:] if a != "--mixed"])
    if sys.argv[1:2] == ["--ping"]:
        run_pinger(sys.argv[2], Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="*", default=[1, 20])
    parser.add_argument(
        "--deltas", type=int, default=0, help="per session, saturated (default: 50000/N)"
    )
    parser.add_argument(
        "--paced-deltas", type=int, default=0, help="per session, paced (default: 10000/N)"
    )
    parser.add_argument(
        "--paced-rate", type=float, default=0, help="deltas/s per session (default: 1000/N)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of an earlier version: measure it too, in the same run, and print "
        "both side by side (e.g. git worktree add /tmp/before <commit>)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run the fake backends at this niceness, so they cannot starve the server of CPU",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--dump", type=Path, help="append (write time, latency ms, session) of the paced run"
    )
    parser.add_argument(
        "--work-dir", type=Path, help="keep data dirs and server logs here (default: a temp dir)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="run the server under cProfile and write its stats here (one session count)",
    )
    args = parser.parse_args()
    relay_parts.FAKE_NICE = args.nice
    results: list[dict[str, Any]] = []
    earlier: list[dict[str, Any]] = []
    say(machine())
    with tempfile.TemporaryDirectory(prefix="angelia-bench-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for n in args.sessions:
            deltas = args.deltas or max(50_000 // n, 200)
            paced_deltas = args.paced_deltas or max(10_000 // n, 100)
            interval = 1 / (args.paced_rate or max(1000 / n, 10))
            result = asyncio.run(
                run_count(n, deltas, paced_deltas, interval, work, args.profile, args.dump)
            )
            report(result)
            results.append(result)
            if args.before:
                raw = (result["raw_pipe_events_per_s"], result["raw_pipe_parsed_events_per_s"])
                old = asyncio.run(
                    run_count(n, deltas, paced_deltas, interval, work, app_dir=args.before, raw=raw)
                )
                report(old)
                earlier.append(old)
    if args.json:
        args.json.write_text(json.dumps({"after": results, "before": earlier}, indent=2))
    if earlier:
        side_by_side(results, earlier)
        say(f"\nbefore: {verdict(earlier)}")
    last = results[-1]
    say(
        f"\nSUMMARY relay: {verdict(results)}; saturated p50 at {last['sessions']} sessions "
        f"{last['saturated_latency_ms']['p50']:.0f} ms, "
        f"{last['server_rss_per_session_kib']:.0f} KiB RSS/session"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
