"""Start-up benchmark: how long the ``angelia`` command takes before it does anything.

    .venv/bin/python bench/startup.py
    .venv/bin/python bench/startup.py --repeat 20 --angelia /path/to/bin/angelia

Times ``angelia --help`` and ``angelia doctor`` (on a fresh temporary data dir, with an
empty PATH for the agent probes so no CLI's own start-up is counted) as child processes,
wall clock from spawn to exit, and lists the heavy packages each imported (read from
``python -X importtime``). The target is under 0.5 s for both on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "sqlmodel", "alembic", "acp")
COMMANDS = {"--help": ["--help"], "doctor": ["doctor"]}


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def run_once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def heavy_imports(args: list[str], env: dict[str, str]) -> list[str]:
    """The top-level heavy packages ``python -m app.cli ARGS`` imports."""
    argv = [sys.executable, "-X", "importtime", "-m", "app.cli", *args]
    err = subprocess.run(argv, env=env, capture_output=True, text=True).stderr
    names = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if "|" in line}
    return [h for h in HEAVY if h in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs of each command")
    parser.add_argument(
        "--angelia",
        default=str(Path(sys.executable).with_name("angelia")),
        help="the angelia executable to time (default: the one beside this Python)",
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    say(f"load average at start: {load:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ANGELIA_DATA_DIR": tmp, "PATH": str(Path(tmp) / "bin")}
        summary = []
        for name, extra in COMMANDS.items():
            run_once([args.angelia, *extra], env)  # warm the file cache
            times = sorted(run_once([args.angelia, *extra], env) for _ in range(args.repeat))
            heavy = ", ".join(heavy_imports(extra, env)) or "none"
            say(
                f"angelia {name:7}  min {times[0]:.3f} s  median {statistics.median(times):.3f} s"
                f"  max {times[-1]:.3f} s  ({args.repeat} runs; imports: {heavy})"
            )
            summary.append(f"{name} {statistics.median(times):.3f} s")
    say("SUMMARY startup median: " + ", ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
