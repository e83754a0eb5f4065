"""What a session changed: a combined diff per file from its tool calls, or the edits one
by one where something else touched the file since."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.services.review.changes import session_changes

Events = list[dict[str, Any]]


class Log:
    """Stored events as the transcript has them: a call, then its result."""

    def __init__(self) -> None:
        self.events: Events = []

    def call(self, tool: str, output: str = "ok", error: bool = False, **data: Any) -> None:
        call_id = f"t{len(self.events)}"
        seq = len(self.events) + 1
        self.events.append(
            {"kind": "tool_call", "seq": seq, "tool_call_id": call_id, "tool": tool, "input": data}
        )
        self.events.append(
            {
                "kind": "tool_result",
                "seq": seq + 1,
                "tool_call_id": call_id,
                "output": output,
                "is_error": error,
            }
        )


def by_path(events: Events, cwd: Path) -> dict[str, dict[str, Any]]:
    return {c.path: c.to_dict() for c in session_changes(events, str(cwd))}


def test_a_created_file_then_edited_is_one_diff_from_nothing(tmp_path: Path) -> None:
    log = Log()
    log.call("Write", "File created successfully at: x", file_path="app.py", content="a = 1\n")
    log.call("Edit", file_path=str(tmp_path / "app.py"), old_string="1", new_string="2")
    (tmp_path / "app.py").write_text("a = 2\n")
    changes = by_path(log.events, tmp_path)
    # One file, whether the tool named it relative or absolute.
    (change,) = changes.values()
    assert (change["path"], change["status"], change["steps"]) == ("app.py", "created", 2)
    assert change["diff"] == "--- a/app.py\n+++ b/app.py\n@@ -0,0 +1 @@\n+a = 2\n"
    assert (change["additions"], change["deletions"], change["changed_outside"]) == (1, 0, False)


def test_edits_are_undone_to_find_the_text_before(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text("one\nTWO\nthree\nFOUR\n")
    log = Log()
    log.call("Edit", file_path="lib.py", old_string="two", new_string="TWO")
    log.call("MultiEdit", file_path="lib.py", edits=[{"old_string": "four", "new_string": "FOUR"}])
    log.call("Edit", error=True, file_path="lib.py", old_string="x", new_string="y")  # failed
    change = by_path(log.events, tmp_path)["lib.py"]
    assert change["status"] == "edited" and not change["changed_outside"]
    assert "-two\n+TWO" in change["diff"] and "-four\n+FOUR" in change["diff"]
    assert (change["additions"], change["deletions"], change["steps"]) == (2, 2, 2)


def test_a_file_changed_since_is_marked_and_shows_the_edits_one_by_one(tmp_path: Path) -> None:
    log = Log()
    log.call("Write", "File created successfully", file_path="notes.md", content="hello\n")
    (tmp_path / "notes.md").write_text("hello\nand someone else\n")
    change = by_path(log.events, tmp_path)["notes.md"]
    assert change["changed_outside"] and change["diff"] == ""
    assert change["step_diffs"] == ["--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hello\n"]


def test_a_deleted_file_and_a_rewound_edit(tmp_path: Path) -> None:
    log = Log()
    log.call("Write", "File created successfully", file_path="gone.txt", content="x\n")
    log.call("Write", "File created successfully", file_path="undone.txt", content="y\n")
    # The rewind went back to before the second call.
    log.events.append({"kind": "rewind", "seq": 99, "event_seq": 3})
    changes = by_path(log.events, tmp_path)
    assert list(changes) == ["gone.txt"]
    assert changes["gone.txt"]["status"] == "deleted" and changes["gone.txt"]["changed_outside"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_write_over_a_tracked_file_diffs_against_the_repository(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "README.md").write_text("# Old\n")
    git("add", "README.md")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    log = Log()
    log.call("Write", "The file has been updated", file_path="README.md", content="# New\n")
    (tmp_path / "README.md").write_text("# New\n")
    change = by_path(log.events, tmp_path)["README.md"]
    assert "-# Old\n+# New" in change["diff"] and not change["changed_outside"]


def test_outside_a_repository_a_write_over_an_old_file_shows_its_steps(tmp_path: Path) -> None:
    log = Log()
    log.call("Write", "The file has been updated", file_path="a.txt", content="new\n")
    (tmp_path / "a.txt").write_text("new\n")
    change = by_path(log.events, tmp_path)["a.txt"]
    # The earlier text is unknown, which is not the same as someone else changing it.
    assert change["diff"] == "" and not change["changed_outside"]
    assert change["step_diffs"] and "+new" in change["step_diffs"][0]


def test_a_file_written_after_the_sessions_last_change_is_marked(tmp_path: Path) -> None:
    # Undoing the edits still works (the other change did not touch them), but the file
    # is newer than the session's last change to it.
    (tmp_path / "lib.py").write_text("NEW\nadded by hand\n")
    log = Log()
    log.call("Edit", file_path="lib.py", old_string="old", new_string="NEW")
    log.events[-1]["at"] = "2026-01-01T10:00:00.000Z"
    change = by_path(log.events, tmp_path)["lib.py"]
    assert change["changed_outside"] and change["diff"] == ""
    log.events[-1]["at"] = "2999-01-01T10:00:00.000Z"
    assert not by_path(log.events, tmp_path)["lib.py"]["changed_outside"]
