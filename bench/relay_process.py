"""The design that would relay one session at half the raw pipe: a reader process per agent.

    .ci/in-netns .venv/bin/python bench/relay_process.py
    .ci/in-netns .venv/bin/python bench/relay_process.py --deltas 300000 --runs 3

Today one event loop reads, frames and parses every agent's output line by line
(docs/performance.md, "Relay"). This measures the alternative before anyone builds it: a
small child process per agent reads the agent's stdout, parses each line (orjson) and joins
runs of text deltas, and hands the app one line per read slice holding the parsed batch.
The parent here stands for the app's event loop and does only what the app would still do
per batch: read it, decode it, count the deltas.

Printed, for one fake ``claude`` streaming ``--deltas`` stamped text deltas flat out
(``bench/relay.py``'s fake): the raw pipe rate (a tight loop counting lines), the rate the
deltas reach the parent through the child and its ratio to the raw pipe, the parent's and
the child's CPU time per delta, the child's memory, and how long the child takes to start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from relay import raw_pipe, scenario_file
from relay_parts import fake_command, machine, say

SLICE = 1 << 16
CHILD = [sys.executable, __file__, "--child"]


def child() -> None:
    """The reader process: stdin is the agent's stdout; each read slice becomes one line
    (a JSON list of events: a joined text run is ``{"text": [..]}``)."""
    pending = b""
    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    while chunk := os.read(0, SLICE):
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        batch: list[Any] = []
        texts: list[str] = []
        for line in lines:
            if not line:
                continue
            item = orjson.loads(line)
            delta = (item.get("event") or {}).get("delta") if item.get("type") else None
            if delta is not None and delta.get("type") == "text_delta":
                texts.append(delta["text"])
                continue
            if texts:
                batch.append({"text": texts})
                texts = []
            batch.append(item)
        if texts:
            batch.append({"text": texts})
        if batch:
            write(orjson.dumps(batch) + b"\n")
            flush()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(
        orjson.dumps({"cpu": usage.ru_utime + usage.ru_stime, "rss_kb": usage.ru_maxrss}).decode()
        + "\n"
    )


class Counter(asyncio.Protocol):
    """The app's side: one decode per batch, deltas counted by their stamps."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.pending = b""
        self.deltas = 0
        self.first = self.last = 0.0
        self.done = done

    def data_received(self, data: bytes) -> None:
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            for event in orjson.loads(line):
                if "text" in event and isinstance(event["text"], list):
                    now = time.perf_counter()
                    self.first = self.first or now
                    self.last = now
                    self.deltas += len(event["text"])
                elif event.get("type") == "result" and not self.done.done():
                    self.done.set_result(None)

    def eof_received(self) -> bool | None:
        if not self.done.done():
            self.done.set_result(None)
        return None


async def through_child(scenario: Path, deltas: int) -> dict[str, float]:
    env = {**os.environ, "FAKE_CLAUDE_SCENARIO": str(scenario)}
    fake = subprocess.Popen(
        fake_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
    )
    started = time.perf_counter()
    reader = subprocess.Popen(
        CHILD, stdin=fake.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert fake.stdout is not None and reader.stdout is not None and fake.stdin is not None
    fake.stdout.close()  # the child holds it now
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    cpu_before = time.process_time()
    transport, counter = await loop.connect_read_pipe(lambda: Counter(done), reader.stdout)
    await asyncio.sleep(0.5)
    fake.stdin.write(b'{"type":"user","message":{"role":"user","content":"go"}}\n')
    await asyncio.wait_for(done, 120)
    parent_cpu = time.process_time() - cpu_before
    fake.kill()
    fake.wait()
    _, err = reader.communicate(timeout=30)
    transport.close()
    report = orjson.loads(err.strip().splitlines()[-1])
    assert counter.deltas == deltas, (counter.deltas, deltas)
    return {
        "rate": counter.deltas / (counter.last - counter.first),
        "parent_us_per_delta": parent_cpu / deltas * 1e6,
        "child_us_per_delta": report["cpu"] / deltas * 1e6,
        "child_rss_mb": report["rss_kb"] / 1024,
        "wall_s": time.perf_counter() - started,
    }


def child_start_ms() -> float:
    """From spawning the reader to its first answer (a one-line batch echoed back)."""
    took = []
    for _ in range(5):
        started = time.perf_counter()
        proc = subprocess.run(
            CHILD, input=b'{"type":"x"}\n', capture_output=True, check=True, timeout=30
        )
        assert proc.stdout.startswith(b"[")
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took)


def main() -> int:
    if "--child" in sys.argv:
        child()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    say(machine())
    with tempfile.TemporaryDirectory(prefix="angelia-relay-process-") as tmp:
        scenario = scenario_file(Path(tmp), args.deltas, 0.0, warm_up=False)
        rows = []
        for _ in range(args.runs):
            raw = raw_pipe(1, args.deltas, scenario)
            piped = asyncio.run(through_child(scenario, args.deltas))
            rows.append({"raw": raw, **piped, "ratio": piped["rate"] / raw})
    say(f"\none session, {args.deltas:,} deltas flat out (median of {args.runs}):")
    for key, unit in (
        ("raw", "lines/s"),
        ("rate", "deltas/s through the reader process"),
        ("ratio", "x the raw pipe"),
        ("parent_us_per_delta", "us of the parent's CPU per delta"),
        ("child_us_per_delta", "us of the reader's CPU per delta"),
        ("child_rss_mb", "MB peak RSS of the reader"),
    ):
        values = ", ".join(f"{r[key]:,.2f}" for r in rows)
        say(f"  {statistics.median(r[key] for r in rows):>12,.2f} {unit}   (runs: {values})")
    say(f"  {child_start_ms():>12,.1f} ms to start a reader and get its first batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
