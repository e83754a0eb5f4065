"""``angelia doctor`` says what a user must know about a backend before choosing it.

Gemini CLI: Google stopped serving it for most personal accounts in June 2026, and an API
key still works. The note sits under the backend's line whether the CLI is there or not.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import fake_cli
from tests.services.profiles.test_doctor_cli import doctor

GEMINI_NOTE = (
    "Google stopped serving Gemini CLI for most personal Google accounts in June 2026; "
    "a Gemini API key (GEMINI_API_KEY in the profile's environment) still works."
)


def lines_under(out: str, heading: str) -> list[str]:
    """The indented lines that follow the line starting with ``heading``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        block.append(" ".join(line.split()))
    return block


def test_the_gemini_line_says_personal_accounts_stopped_and_an_api_key_works(
    tmp_path: Path, bindir: Path
) -> None:
    fake_cli(bindir, "gemini", 'print("0.61.0")')
    found = doctor(tmp_path, bindir)
    assert found.returncode == 0, found.stderr
    assert f"note {GEMINI_NOTE}" in lines_under(found.stdout, "backend gemini")

    (bindir / "gemini").unlink()
    missing = doctor(tmp_path, bindir).stdout
    assert f"note {GEMINI_NOTE}" in lines_under(missing, "backend gemini")
    # No other backend carries such a note.
    notes = [line for line in missing.splitlines() if line.strip().startswith("note ")]
    assert len(notes) == 1, notes


def test_the_json_report_carries_the_note(tmp_path: Path, bindir: Path) -> None:
    report = json.loads(doctor(tmp_path, bindir, "--json").stdout)
    notices = {b["name"]: b["notice"] for b in report["backends"]}
    assert notices["gemini"] == GEMINI_NOTE
    assert {name for name, notice in notices.items() if notice} == {"gemini"}
