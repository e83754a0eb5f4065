"""Mixed load: does one busy session stall the others? (``relay.py --mixed`` runs this.)

    .ci/in-netns .venv/bin/python bench/relay_mixed.py
    .ci/in-netns .venv/bin/python bench/relay_mixed.py --repeat 3 --before /tmp/angelia-before

Each case runs 19 *paced* sessions (a fake ``claude`` writing 50 stamped text deltas per
second each, 10 s) plus one more session, all with an SSE client, against a fresh
``angelia serve``:

* ``quiet``: the 20th session says nothing (the baseline the ratios refer to);
* ``big``: the 20th session writes one 20 MB tool-result line (a ``cat`` of a big file:
  a ``user`` message whose ``tool_result`` content is 20 MB of text) 3 s in;
* ``flood``: the 20th session streams text deltas as fast as it can for 8 s.

Measured: ``/api/health`` from a separate process every 10 ms (p50/p99/max) and the paced
sessions' latency from the fake's write to the SSE client's receipt (p50/p99/max). Targets:
``/api/health`` p99 <= 20 ms, paced p99 <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from relay_parts import (
    REPO,
    TARGET_HEALTH_P99_MS,
    TARGET_P99_MS,
    TOKEN,
    Pinger,
    Server,
    SessionStats,
    cpu_snapshot,
    fake_profiles,
    free_port,
    machine,
    other_cpu_percent,
    read_stream,
    say,
    wait_ready,
    warm_up,
)

PACED = 19
PACED_RATE = 50.0  # deltas/s per paced session
PACED_S = 10.0
BIG_MB = 20.0
BIG_AT_S = 3.0
FLOOD_AT_S = 1.0
FLOOD_S = 8.0
CASES = ("quiet", "big", "flood")
STARTUP_S = 0.5


def busy_turn(case: str, big_mb: float) -> list[dict[str, Any]]:
    if case == "big":
        return [{"sleep": BIG_AT_S}, {"tool_result_mb": big_mb}]
    if case == "flood":
        return [{"sleep": FLOOD_AT_S}, {"flood_s": FLOOD_S}]
    return [{"text": "quiet"}]


def write_scenario(work: Path, name: str, turn: list[dict[str, Any]]) -> Path:
    path = work / f"mixed-{name}.json"
    path.write_text(json.dumps({"turns": [[{"text": "warm"}], turn]}))
    return path


def run_drain(url: str, sid: str, after: str, out: Path) -> None:
    """``--drain``: the 20th session's SSE client, a process of its own like a browser tab,
    so reading a 20 MB event or a flood cannot delay the paced sessions' readers. It
    counts what arrives without decoding it and writes the counts to ``out`` at the end."""
    import http.client
    import re
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)
    conn.request(
        "GET",
        f"/api/sessions/{sid}/stream?after={after}",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    resp = conn.getresponse()
    out.with_suffix(".open").touch()
    seen = {"bytes": 0, "deltas": 0, "tool_result_bytes": 0}
    buf = bytearray()
    scan = 0
    while chunk := resp.read1(1 << 16):
        buf += chunk
        seen["bytes"] += len(chunk)
        while (end := buf.find(b"\n\n", scan)) >= 0:
            event = bytes(buf[:end])
            del buf[: end + 2]
            scan = 0
            kind = m.group(1) if (m := re.search(rb"^event: ?(\S+)", event, re.M)) else b""
            if kind == b"text_delta":  # compact JSON: the only spaces end the stamps
                seen["deltas"] += event.count(b" ") - 2
            elif kind == b"tool_result":
                seen["tool_result_bytes"] = len(event)
                if b'"elided"' in event:  # a stand-in: read the whole event where it says
                    data = json.loads(event.split(b"data: ", 1)[1].split(b"\n", 1)[0])
                    seen["tool_result_bytes"] = fetch_whole(parts, data["elided"]["href"])
                    seen["fetched"] = 1
            elif kind in (b"turn_end", b"error"):
                out.write_text(json.dumps(seen))
                return
        scan = max(len(buf) - 1, 0)
    out.write_text(json.dumps(seen))


def fetch_whole(parts: Any, href: str) -> int:
    """GET ``href`` (the whole of an event a stream left out), reading it as it comes;
    its length in bytes."""
    import http.client

    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)
    conn.request("GET", href, headers={"Authorization": f"Bearer {TOKEN}"})
    resp = conn.getresponse()
    size = 0
    while chunk := resp.read1(1 << 16):
        size += len(chunk)
    conn.close()
    return size


class Drain:
    def __init__(self, url: str, sid: str, after: int, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--drain", url, sid, str(after), str(out)]
        )

    async def opened(self) -> None:
        while not self.out.with_suffix(".open").exists():
            await asyncio.sleep(0.05)

    async def finished(self) -> dict[str, int]:
        await asyncio.to_thread(self.proc.wait, 600)
        seen: dict[str, int] = json.loads(self.out.read_text())
        return seen


def quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if len(values) < 2:
        return {
            "p50": values[0] if values else 0.0,
            "p99": values[-1] if values else 0.0,
            "max": values[-1] if values else 0.0,
            "n": len(values),
        }
    q = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": q[49], "p99": q[98], "max": values[-1], "n": len(values)}


async def run_case(case: str, work: Path, app_dir: Path, big_mb: float) -> dict[str, Any]:
    import httpx

    paced = write_scenario(
        work,
        "paced",
        [{"burst": int(PACED_RATE * PACED_S), "interval": 1 / PACED_RATE}],
    )
    busy = write_scenario(work, case, busy_turn(case, big_mb))
    server = Server(work / f"data-{case}-{time.time_ns()}", free_port(), app_dir=app_dir)
    try:
        async with httpx.AsyncClient(
            base_url=server.url,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=httpx.Timeout(600, connect=5),
            limits=httpx.Limits(max_connections=100),
        ) as client:
            await wait_ready(client)
            profiles = await fake_profiles(client, work, {"paced": paced, "busy": busy})
            sids = []
            for name in ["busy"] + ["paced"] * PACED:
                r = await client.post("/api/sessions", json={"profile_id": profiles[name]})
                r.raise_for_status()
                sids.append(r.json()["id"])
            after = await warm_up(client, sids)
            stats = [SessionStats() for _ in sids[1:]]
            readies = [asyncio.Event() for _ in sids[1:]]
            drain = Drain(server.url, sids[0], after[sids[0]], work / f"drain-{time.time_ns()}")
            readers = [
                asyncio.create_task(read_stream(client, sid, after[sid], st, ev))
                for sid, st, ev in zip(sids[1:], stats, readies, strict=True)
            ]
            await asyncio.gather(drain.opened(), *(e.wait() for e in readies))
            pinger = Pinger(server.url, work / f"pings-{case}-{time.time_ns()}.json")
            before = cpu_snapshot(server)
            started = time.perf_counter()
            await asyncio.gather(
                *(client.post(f"/api/sessions/{sid}/messages", json={"text": "go"}) for sid in sids)
            )
            turns_started = time.time()
            await asyncio.wait_for(asyncio.gather(*readers), timeout=600)
            seen = await drain.finished()
            span = time.perf_counter() - started
            pings = pinger.stop()
            other = other_cpu_percent(before, cpu_snapshot(server))
    finally:
        server.stop()
    latencies = [x for s in stats for x in s.latencies_ms]
    expected = PACED * int(PACED_RATE * PACED_S)
    assert len(latencies) == expected, (len(latencies), expected)
    return {
        "case": case,
        "app": str(app_dir),
        "health_ms": quantiles(pings),
        "paced_ms": quantiles(latencies),
        # Without the first deltas, written while the 20 turns were being started (each
        # start updates the session on the event loop): what the busy session alone costs.
        "paced_started_ms": quantiles(
            [
                x
                for s in stats
                for t, x in zip(s.sent, s.latencies_ms, strict=True)
                if t > turns_started + STARTUP_S
            ]
        ),
        "paced_over_target": sum(x > TARGET_P99_MS for x in latencies),
        # Until the event was appended (its "at", 1 ms steps): the rest is storing,
        # fan-out and SSE.
        "paced_until_appended_ms": quantiles([x for s in stats for x in s.stored_ms]),
        "busy": seen,
        "busy_deltas_per_s": seen.get("deltas", 0) / FLOOD_S if case == "flood" else 0.0,
        "span_s": span,
        "other_cpu_percent": other,
    }


def report(r: dict[str, Any], quiet: dict[str, Any] | None) -> None:
    h, p = r["health_ms"], r["paced_ms"]
    line = (
        f"{r['case']:<6} /api/health p50 {h['p50']:5.1f} p99 {h['p99']:6.1f} max {h['max']:6.1f} ms"
        f" ({h['n']} pings) | paced p50 {p['p50']:5.2f} p99 {p['p99']:6.2f} max {p['max']:7.1f} ms"
        f" ({r['paced_over_target']} of {p['n']} over {TARGET_P99_MS:g} ms)"
    )
    if quiet is not None and r is not quiet:
        line += (
            f" | ratio to quiet: health p99 {h['p99'] / quiet['health_ms']['p99']:.1f}x,"
            f" paced p99 {p['p99'] / quiet['paced_ms']['p99']:.1f}x"
        )
    say(line)
    b = r["paced_started_ms"]
    say(
        f"       paced after start-up ({STARTUP_S:g} s): p50 {b['p50']:5.2f} p99 {b['p99']:6.2f}"
        f" max {b['max']:.1f} ms"
    )
    a = r["paced_until_appended_ms"]
    say(f"       paced until appended: p50 {a['p50']:5.2f} p99 {a['p99']:6.2f} max {a['max']:.1f}")
    extra = f"       other work {r['other_cpu_percent']:.0f}% of the CPU time; {r['span_s']:.1f} s"
    if r["case"] == "big":
        extra += f"; tool result event received: {r['busy'].get('tool_result_bytes', 0):,} bytes"
        if r["busy"].get("fetched"):
            extra += " (a stand-in on the stream, the whole event by its href)"
    if r["case"] == "flood":
        extra += f"; flooding session relayed {r['busy_deltas_per_s']:,.0f} deltas/s"
    say(extra)


def spread(runs: list[dict[str, Any]], case: str, key: str, q: str) -> str:
    values = [r[key][q] for r in runs if r["case"] == case]
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def summary(label: str, runs: list[dict[str, Any]]) -> None:
    say(f"\n== {label}: median (min-max) of {len(runs) // len(CASES)} run(s) ==")
    for case in CASES:
        say(
            f"{case:<6} health p99 {spread(runs, case, 'health_ms', 'p99'):>18}"
            f"  max {spread(runs, case, 'health_ms', 'max'):>20}"
            f" | paced p99 {spread(runs, case, 'paced_ms', 'p99'):>18}"
            f"  max {spread(runs, case, 'paced_ms', 'max'):>20}"
            f" | after start-up p99 {spread(runs, case, 'paced_started_ms', 'p99'):>18}"
        )


def verdict(runs: list[dict[str, Any]]) -> str:
    parts = []
    ok = True
    for case in ("big", "flood"):
        health = statistics.median(r["health_ms"]["p99"] for r in runs if r["case"] == case)
        paced = statistics.median(r["paced_ms"]["p99"] for r in runs if r["case"] == case)
        ok &= health <= TARGET_HEALTH_P99_MS and paced <= TARGET_P99_MS
        parts.append(f"{case}: health p99 {health:.1f} ms, paced p99 {paced:.2f} ms")
    targets = f"(<= {TARGET_HEALTH_P99_MS:g} / {TARGET_P99_MS:g} ms)"
    return "; ".join(parts) + f" {targets} -> {'MET' if ok else 'MISSED'}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--drain"]:
        run_drain(argv[1], argv[2], argv[3], Path(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of every case")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    parser.add_argument("--big-mb", type=float, default=BIG_MB)
    parser.add_argument("--before", type=Path, help="an earlier checkout, measured alternately")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    say(machine())
    apps = [("after", REPO)] + ([("before", args.before)] if args.before else [])
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in apps}
    with tempfile.TemporaryDirectory(prefix="angelia-mixed-") as tmp:
        work = Path(tmp)
        for i in range(args.repeat):
            for label, app_dir in apps:
                say(f"\n-- run {i + 1}, {label}: {app_dir} --")
                quiet = None
                for case in args.cases:
                    result = asyncio.run(run_case(case, work, app_dir, args.big_mb))
                    quiet = result if case == "quiet" else quiet
                    report(result, quiet)
                    runs[label].append(result)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    if set(args.cases) == set(CASES):
        for label, _ in reversed(apps):
            summary(label, runs[label])
        for label, _ in reversed(apps):
            say(f"\nSUMMARY mixed ({label}): {verdict(runs[label])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
