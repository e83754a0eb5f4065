"""Print the backend conformance table from the test suite.

Each cell is backed by tests marked ``@pytest.mark.conformance``
(``tests/conformance_plugin.py``)::

    python scripts/conformance.py                  # collect the marked tests, run nothing
    python scripts/conformance.py --results FILE   # from a run with ANGELIA_CONFORMANCE_OUT=FILE
    python scripts/conformance.py --write          # also update the app's copy and the docs
    python scripts/conformance.py --check          # exit 1 when either differs

From collection alone each marked test counts as backing its cell (the suite is green on
every commit); from a run's results a cell counts only when all its tests passed, so a
skipped real CLI leaves its cells "untested" and a failing test fails ``--check``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.brains.conformance import FEATURES, RESULTS  # noqa: E402

APP_COPY = ROOT / "app" / "brains" / "conformance.json"
DOCS = ROOT / "docs" / "backends.md"
START, END = "<!-- conformance-table:start -->", "<!-- conformance-table:end -->"
ORDER = [
    "claude",
    "grok",
    "gemini",
    "claude-acp",
    "opencode",
    "codex",
    "pi",
    "qwen",
    "copilot",
]
# backend → the pinned packages in .ci/setup that make up what was tested.
PINS = {
    "claude": [("Claude Code", "CLAUDE_CODE_VERSION")],
    "grok": [("grok-cli-bin", "GROK_CLI_VERSION")],
    "gemini": [("gemini-cli", "GEMINI_CLI_VERSION")],
    # The adapter runs the Claude Code its own package bundles.
    "claude-acp": [("claude-agent-acp", "CLAUDE_AGENT_ACP_VERSION")],
    "opencode": [("opencode-ai", "OPENCODE_VERSION")],
    "pi": [("pi", "PI_VERSION"), ("pi-acp", "PI_ACP_VERSION")],
    # codex-acp runs the codex app-server of the @openai/codex it depends on.
    "codex": [("codex-acp", "CODEX_ACP_VERSION")],
    "qwen": [("qwen-code", "QWEN_CODE_VERSION")],
    "copilot": [("@github/copilot", "COPILOT_VERSION")],
}


# Column headers that say what a ✓ means where the feature's name alone would not.
HEADERS = {
    **FEATURES,
    "plan_mode": "plan mode (✓: no file change and no command with side effects until the "
    "plan is approved)",
}


class Mismatch(Exception):
    pass


def collect() -> list[dict[str, Any]]:
    """The marked tests, from ``pytest --collect-only`` (nothing runs)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "conformance.json"
        env = os.environ | {"ANGELIA_CONFORMANCE_OUT": str(out)}
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        done = subprocess.run(
            [*cmd, "tests"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0 or not out.is_file():
            raise Mismatch(f"collecting the tests failed:\n{done.stdout[-3000:]}{done.stderr}")
        rows: list[dict[str, Any]] = json.loads(out.read_text("utf-8"))
        return rows


def versions() -> dict[str, str]:
    setup = (ROOT / ".ci" / "setup").read_text("utf-8")
    pinned = dict(re.findall(r"^([A-Z0-9_]+_VERSION)=(\S+)$", setup, re.MULTILINE))
    return {
        backend: " + ".join(f"{name} {pinned[var]}" for name, var in pins)
        for backend, pins in PINS.items()
    }


def build(backings: list[dict[str, Any]], *, ran: bool) -> dict[str, Any]:
    """The table as the app's JSON copy: backend → version and feature → result + tests.

    ``ran``: the backings come from a run, and only tests that passed back a cell."""
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for b in backings:
        by_cell[(b["backend"], b["feature"])].append(b)
    failing = [b["nodeid"] for b in backings if b["outcome"] == "failed"]
    if failing:
        raise Mismatch("tests behind the table failed:\n  " + "\n  ".join(failing))
    backs = {"passed"} if ran else {"collected"}
    pinned = versions()
    backends = sorted(
        {b for b, _ in by_cell}, key=lambda b: (ORDER.index(b) if b in ORDER else 99, b)
    )
    table: dict[str, Any] = {}
    for backend in backends:
        features: dict[str, Any] = {}
        for feature in FEATURES:
            cell = [b for b in by_cell.get((backend, feature), []) if b["outcome"] in backs]
            if not cell:
                continue
            results = {b["result"] for b in cell}
            if len(results) > 1:
                raise Mismatch(f"{backend} {feature}: tests disagree ({sorted(results)})")
            tests = sorted({b["nodeid"] for b in cell})
            features[feature] = {"result": results.pop(), "tests": tests}
        if features:
            table[backend] = {"version": pinned.get(backend, ""), "features": features}
    return {"backends": table}


def markdown(table: dict[str, Any]) -> str:
    head = "| Backend (versions tested) | " + " | ".join(HEADERS.values()) + " |"
    lines = [head, "|---" * (len(FEATURES) + 1) + "|"]
    for backend, entry in table["backends"].items():
        cells = [
            RESULTS[entry["features"][f]["result"]] if f in entry["features"] else "untested"
            for f in FEATURES
        ]
        lines.append(f"| `{backend}` ({entry['version']}) | " + " | ".join(cells) + " |")
    lines += ["", "<details><summary>The tests behind each cell</summary>", ""]
    for backend, entry in table["backends"].items():
        lines.append(f"- `{backend}`")
        for feature, cell in entry["features"].items():
            tests = ", ".join(f"`{t}`" for t in cell["tests"])
            lines.append(f"  - {FEATURES[feature]} ({RESULTS[cell['result']]}): {tests}")
    lines += ["", "</details>"]
    return "\n".join(lines)


def with_table(docs: str, table_md: str) -> str:
    start, end = docs.index(START) + len(START), docs.index(END)
    return f"{docs[:start]}\n{table_md}\n{docs[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="the file a test run wrote")
    parser.add_argument("--write", action="store_true", help="update the app copy and docs")
    parser.add_argument("--check", action="store_true", help="exit 1 if they differ")
    args = parser.parse_args(argv)
    try:
        backings = json.loads(args.results.read_text("utf-8")) if args.results else collect()
        table = build(backings, ran=args.results is not None)
    except Mismatch as exc:
        print(exc, file=sys.stderr)
        return 1
    table_md = markdown(table)
    print(table_md)
    app_text = json.dumps(table, indent=1, ensure_ascii=False) + "\n"
    docs_text = with_table(DOCS.read_text("utf-8"), table_md)
    if args.write:
        APP_COPY.write_text(app_text, "utf-8")
        DOCS.write_text(docs_text, "utf-8")
    if args.check:
        stale = [
            str(path.relative_to(ROOT))
            for path, text in ((APP_COPY, app_text), (DOCS, docs_text))
            if not path.is_file() or path.read_text("utf-8") != text
        ]
        if stale:
            print(
                f"out of date: {', '.join(stale)}; run python scripts/conformance.py --write",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
