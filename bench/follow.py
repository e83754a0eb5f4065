"""Following a terminal session: how soon a line the CLI writes reaches the page's stream.

    .venv/bin/python bench/follow.py
    .venv/bin/python bench/follow.py --history 10000 --lines 50

A transcript of ``--history`` entries (prompts, tool calls and results, answers) is followed
with the app's ``Follower``; then ``--lines`` entries are appended one at a time, a turn's
worth apart, and each is timed from its write to the moment its event reaches a live
subscriber of the session, which is what the page's SSE stream sends on. Also timed: the
first following of the long file (what opening its page costs) and the raw cost of one
step of the import, to show where the time goes. Target: p95 under 500 ms per line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.db.engine import open_database  # noqa: E402
from app.services.store.eventlog import EventLog  # noqa: E402
from app.services.transcripts.follow import DEBOUNCE_MS, Follower  # noqa: E402

TARGET_MS = 500.0
SID = "bbbbbbbb-0000-4000-8000-000000000000"
CWD = "/srv/bench/app"


def entries(start: int, count: int) -> list[dict[str, Any]]:
    """``count`` entries continuing a thread: prompt, tool call, result, answer, ..."""
    out = []
    for n in range(start, start + count):
        base = {
            "uuid": f"e{n}",
            "parentUuid": f"e{n - 1}" if n else None,
            "sessionId": SID,
            "cwd": CWD,
            "timestamp": "2026-12-04T10:00:00Z",
        }
        step = n % 4
        if step == 0:
            message: dict[str, Any] = {"role": "user", "content": f"prompt {n}: do the thing"}
            out.append(base | {"type": "user", "message": message})
        elif step == 1:
            call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
            message = {"role": "assistant", "id": f"m{n}", "content": [call]}
            out.append(
                base | {"type": "assistant", "message": message | {"stop_reason": "tool_use"}}
            )
        elif step == 2:
            result = {"type": "tool_result", "tool_use_id": f"t{n - 1}", "content": "a\nb\n" * 20}
            out.append(base | {"type": "user", "message": {"role": "user", "content": [result]}})
        else:
            text = {"type": "text", "text": f"answer {n} " + "words " * 40}
            message = {"role": "assistant", "id": f"m{n}", "content": [text]}
            out.append(
                base | {"type": "assistant", "message": message | {"stop_reason": "end_turn"}}
            )
    return out


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(history: int, lines: int, gap_s: float) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_database(Path(tmp) / "data")
        events = EventLog(engine)
        folder = Path(tmp) / "projects" / "-srv-bench-app"
        folder.mkdir(parents=True)
        path = folder / f"{SID}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in entries(0, history)))
        follower = Follower(engine, events, proc=Path(tmp) / "no-proc")
        started = time.perf_counter()
        report = await follower.follow(path)
        open_ms = (time.perf_counter() - started) * 1000
        chat_id = report.chat_session_id
        assert chat_id is not None, report
        delays: list[float] = []
        with events.subscribe(chat_id) as sub:
            for entry in entries(history, lines):
                await asyncio.sleep(gap_s)
                written = time.perf_counter()
                with path.open("a") as f:
                    f.write(json.dumps(entry) + "\n")
                while True:
                    event = await asyncio.wait_for(sub.queue.get(), 10)
                    if event is not None and event.payload.get("uuid") == entry["uuid"]:
                        break
                delays.append((time.perf_counter() - written) * 1000)
        await follower.close()
        await events.close()

    p50, p95 = statistics.median(delays), pct(delays, 0.95)
    say(f"transcript of {history} entries, {lines} lines appended {gap_s * 1000:.0f} ms apart")
    say(f"  first following (opening the page): {open_ms:.0f} ms")
    say(
        f"  line written -> event streamed: p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
        f"max {max(delays):.0f} ms (debounce {DEBOUNCE_MS} ms)"
    )
    say(
        f"  p95 / target ({TARGET_MS:.0f} ms): {p95 / TARGET_MS:.2f} -> "
        f"{'MET' if p95 <= TARGET_MS else 'MISSED'}"
    )
    return 0 if p95 <= TARGET_MS else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.25, help="seconds between lines")
    args = parser.parse_args()
    return asyncio.run(run(args.history, args.lines, args.gap))


if __name__ == "__main__":
    raise SystemExit(main())
