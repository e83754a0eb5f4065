"""A session's changes as git sees them: how long ``app.services.git.changes.diff`` takes.

    .venv/bin/python bench/changes.py
    .venv/bin/python bench/changes.py --repeat 50 --files 10000 --changed 1000

Builds, in a temporary folder, with the real ``git``:

- a repository of ``--files`` files (a worktree is made of it) where ``--changed`` files
  differ from the base: edited by a shell command, committed in the worktree, created,
  deleted and renamed;
- the same size of repository with 3 changed files, timed both as a session worktree
  against its base commit and as a plain checkout against a snapshot tree;

then times ``diff`` ``--repeat`` times on each (the first call separately: it is the one
after the files changed) and prints p50/p95/max against the target: p95 under 300 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.services.git import changes, merge, worktrees  # noqa: E402

TARGET_MS = 300.0
FILE_LINES = 60  # about 2 KB a file: source-file sized


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def make_repo(folder: Path, files: int) -> Path:
    """``files`` text files in folders of 100, committed on ``main``."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.name", "Bench")
    git(folder, "config", "user.email", "bench@example.test")
    for n in range(files):
        path = folder / f"pkg{n // 100:03}" / f"mod{n % 100:02}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"value_{n}_{i} = {i}  # line {i}\n" for i in range(FILE_LINES)))
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "start")
    return folder


def file_at(root: Path, n: int) -> Path:
    return root / f"pkg{n // 100:03}" / f"mod{n % 100:02}.py"


def change_many(wt: Path, changed: int) -> None:
    """``changed`` files differ from the base: 70 % edited (a tenth of them committed),
    10 % new, 10 % deleted, 10 % renamed."""
    tenth = changed // 10
    edited = changed - 3 * tenth
    for n in range(edited):
        path = file_at(wt, n)
        path.write_text(path.read_text().replace(" = 5  #", " = 500  #"))
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "edits so far")
    for n in range(edited // 10):
        with file_at(wt, n).open("a") as f:
            f.write("after_commit = True\n")
    for n in range(tenth):
        (wt / "new" / f"{n // 100}").mkdir(parents=True, exist_ok=True)
        (wt / "new" / f"{n // 100}" / f"made{n}.py").write_text(f"made = {n}\n" * 30)
    for n in range(edited, edited + tenth):
        file_at(wt, n).unlink()
    for n in range(edited + tenth, edited + 2 * tenth):
        source = file_at(wt, n)
        source.rename(source.with_name(f"renamed_{source.name}"))


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(name: str, repeat: int, call: Callable[[], int]) -> tuple[str, float]:
    started = time.perf_counter()
    count = call()
    first = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    p95 = percentile(times, 0.95)
    verdict = "ok" if p95 <= TARGET_MS else "OVER"
    say(
        f"{name:44} {count:5} files  first {first:6.1f} ms  p50 {statistics.median(times):6.1f}"
        f"  p95 {p95:6.1f}  max {max(times):6.1f} ms  ({repeat} runs; target {TARGET_MS:.0f}:"
        f" {verdict})"
    )
    return name, p95


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed calls of each case")
    parser.add_argument("--files", type=int, default=10_000, help="files in each repository")
    parser.add_argument("--changed", type=int, default=1_000, help="changed files, first case")
    args = parser.parse_args()
    say(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    summary = []
    with tempfile.TemporaryDirectory(prefix="angelia-bench-changes-") as tmp:
        home = Path(tmp)
        os.environ["HOME"] = str(home)  # no user config: the figures are git's own
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        root = home / "data" / "worktrees"

        many = make_repo(home / "many", args.files)
        wt = worktrees.create(many, root, "many")
        change_many(wt.path, args.changed)
        summary.append(
            measure(
                f"worktree, {args.changed:,} changed",
                args.repeat,
                lambda: len(changes.diff(wt.path, wt.base_commit)),
            )
        )

        few = make_repo(home / "few", args.files)
        small = worktrees.create(few, root, "few")
        tree = changes.snapshot(few)
        for where in (small.path, few):
            for n in (1, 2):
                with file_at(where, n).open("a") as f:
                    f.write("changed = True\n")
            (where / "notes.txt").write_text("a new file\n")
        merge.commit(small.path, "one of the three, committed")
        summary.append(
            measure(
                f"worktree, {args.files:,} files, 3 changed",
                args.repeat,
                lambda: len(changes.diff(small.path, small.base_commit)),
            )
        )
        summary.append(
            measure(
                f"checkout vs snapshot, {args.files:,} files, 3 changed",
                args.repeat,
                lambda: len(changes.diff(few, tree)),
            )
        )
    say("SUMMARY changes p95: " + ", ".join(f"{name} {p95:.0f} ms" for name, p95 in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
