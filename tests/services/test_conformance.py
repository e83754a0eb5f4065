"""The conformance table: built from the marked tests, and the shipped copies match it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.brains.conformance import FEATURES, cells_from_json, table

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "conformance_script", ROOT / "scripts/conformance.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


script = _script()


def backing(
    backend: str, feature: str, outcome: str, result: str = "yes", n: int = 0
) -> dict[str, Any]:
    return {
        "nodeid": f"tests/real/test_x.py::test_{feature}_{n}[{backend}]",
        "backend": backend,
        "feature": feature,
        "result": result,
        "outcome": outcome,
    }


def test_the_docs_and_the_apps_copy_match_the_marked_tests() -> None:
    # Collects the whole suite (nothing runs), as `scripts/conformance.py --check` does.
    assert script.main(["--check"]) == 0


def test_a_cell_counts_only_when_all_its_tests_passed() -> None:
    built = script.build(
        [
            backing("pi", "stream", "passed"),
            backing("pi", "interrupt", "skipped"),
            backing("pi", "images", "passed", result="refused"),
        ],
        ran=True,
    )
    cells = built["backends"]["pi"]["features"]
    assert cells["stream"]["result"] == "yes"
    assert "interrupt" not in cells
    assert cells["images"]["result"] == "refused"
    text = script.markdown(built)
    row = next(line for line in text.splitlines() if line.startswith("| `pi`"))
    assert row.count("untested") == len(FEATURES) - 2, row
    assert "refused by the app" in row


def test_a_failing_test_or_a_disagreement_is_an_error() -> None:
    with pytest.raises(script.Mismatch, match="failed"):
        script.build([backing("pi", "stream", "failed")], ran=True)
    with pytest.raises(script.Mismatch, match="disagree"):
        script.build(
            [
                backing("pi", "mcp", "collected", "yes", 1),
                backing("pi", "mcp", "collected", "no", 2),
            ],
            ran=False,
        )


def test_collected_tests_do_not_count_as_results() -> None:
    # A test that never ran (deselected) backs nothing in a run's results.
    built = script.build([backing("grok", "mcp", "collected")], ran=True)
    assert built == {"backends": {}}


def test_the_shipped_table_is_read_with_every_cell_named_by_tests() -> None:
    rows = table()
    assert {"claude", "grok", "gemini", "claude-acp", "opencode", "pi"} <= set(rows)
    for row in rows.values():
        assert row.version
        for cell in row.cells:
            assert cell.tests and all(t.startswith("tests/") for t in cell.tests), cell


def test_an_unknown_result_in_the_data_is_refused() -> None:
    data = {
        "backends": {
            "x": {"version": "1", "features": {"stream": {"result": "maybe", "tests": []}}}
        }
    }
    with pytest.raises(ValueError, match="maybe"):
        cells_from_json(json.loads(json.dumps(data)))
