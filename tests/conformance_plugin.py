"""The ``conformance`` marker: which cell of the backend conformance table a test backs.

``@pytest.mark.conformance("interrupt")`` on a test of one backend, with ``backend=``
naming it, or left out for tests parametrised by an ``agent`` fixture whose param is the
backend. ``result`` is what the test proves: ``"yes"`` (works), ``"no"`` (the CLI lacks
it) or ``"refused"`` (the app refuses it with a reason); a dict maps backends to results.

With ``ANGELIA_CONFORMANCE_OUT`` set, the run writes every marked test, its cell and its
outcome there as JSON; ``scripts/conformance.py`` turns that into the table.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

import pytest

from app.brains.conformance import FEATURES, RESULTS

ENV = "ANGELIA_CONFORMANCE_OUT"


@dataclass
class Backing:
    nodeid: str
    backend: str
    feature: str
    result: str
    outcome: str = "collected"


def backings_of(item: pytest.Item) -> list[Backing]:
    """The cells ``item`` backs; a marker naming an unknown feature, result or backend raises."""
    return [_backing(item, marker) for marker in item.iter_markers("conformance")]


def _backing(item: pytest.Item, marker: pytest.Mark) -> Backing:
    (feature,) = marker.args
    if feature not in FEATURES:
        raise pytest.UsageError(f"{item.nodeid}: unknown conformance feature {feature!r}")
    backend = marker.kwargs.get("backend")
    if backend is None:
        params = getattr(getattr(item, "callspec", None), "params", {})
        backend = params.get("agent")
    if not isinstance(backend, str):
        raise pytest.UsageError(f"{item.nodeid}: conformance marker names no backend")
    result = marker.kwargs.get("result", "yes")
    if isinstance(result, dict):
        result = result.get(backend, result.get("*", "yes"))
    if result not in RESULTS:
        raise pytest.UsageError(f"{item.nodeid}: unknown conformance result {result!r}")
    return Backing(item.nodeid, backend, feature, result)


class _Recorder:
    """Collects the marked tests' outcomes from their reports.

    The cells travel on each report's ``user_properties``, so this works the same in one
    process and in the controller of a run spread over several worker processes (which
    sees reports but never items).
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.backings: dict[str, list[Backing]] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # In one process, tests collected but never run are listed too (as "collected").
        for item in items:
            backings = backings_of(item)
            if backings:
                self.backings[item.nodeid] = backings

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cells = [
            cast(dict[str, str], value)
            for name, value in report.user_properties
            if name == _PROPERTY
        ]
        if not cells:
            return
        backings = self.backings.setdefault(report.nodeid, [Backing(**cell) for cell in cells])
        for backing in backings:
            self._record(backing, report)

    @staticmethod
    def _record(backing: Backing, report: pytest.TestReport) -> None:
        # A test passes when its call passed and nothing around it failed.
        if report.failed:
            backing.outcome = "failed"
        elif report.skipped and backing.outcome != "failed":
            backing.outcome = "skipped"
        elif report.when == "call" and report.passed and backing.outcome == "collected":
            backing.outcome = "passed"

    def pytest_sessionfinish(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        rows = [asdict(b) for cell in self.backings.values() for b in cell]
        self.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


_PROPERTY = "angelia-conformance"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Checked on every run, so a misspelt marker fails at once and not only in CI.
    for item in items:
        for backing in backings_of(item):
            item.user_properties.append((_PROPERTY, asdict(backing)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "conformance(feature, backend=None, result='yes'): a conformance table cell"
    )
    out = os.environ.get(ENV)
    # Under pytest-xdist only the controller writes the file; workers pass reports to it.
    if out and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(out)), "angelia-conformance")
