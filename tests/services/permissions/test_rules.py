"""Rule syntax and matching: prefix, glob, MCP server, deny over allow, suggestions."""

from __future__ import annotations

import pytest

from app.services.permissions.rules import Rule, decide_by_rules, rule_matches, suggest_rule

CWD = "/work/proj"


@pytest.mark.parametrize(
    ("rule", "command", "expected"),
    [
        ("Bash(git add:*)", "git add src/a.py", True),
        ("Bash(git add:*)", "git add", True),
        ("Bash(git add:*)", "git addendum", False),
        ("Bash(git add:*)", "git commit -m x", False),
        ("Bash(npm test)", "npm test", True),
        ("Bash(npm test)", "npm test --watch", False),
        ("Bash", "anything at all", True),
    ],
)
def test_bash_prefix_rules(rule: str, command: str, expected: bool) -> None:
    assert rule_matches(Rule.parse(rule), "Bash", {"command": command}, CWD) is expected


@pytest.mark.parametrize(
    ("rule", "tool", "path", "expected"),
    [
        ("Edit(src/**)", "Edit", f"{CWD}/src/a/b.py", True),
        ("Edit(src/**)", "Edit", f"{CWD}/srcx/b.py", False),
        ("Edit(src/*.py)", "Edit", f"{CWD}/src/b.py", True),
        ("Edit(src/*.py)", "Edit", f"{CWD}/src/a/b.py", False),
        ("Edit(**/*.md)", "Edit", f"{CWD}/README.md", True),
        ("Edit(/etc/**)", "Edit", "/etc/passwd", True),
        ("Edit(src/**)", "Write", f"{CWD}/src/a.py", False),
        ("Read", "Read", "/anything", True),
    ],
)
def test_file_globs(rule: str, tool: str, path: str, expected: bool) -> None:
    assert rule_matches(Rule.parse(rule), tool, {"file_path": path}, CWD) is expected


def test_mcp_server_rule_covers_its_tools_only() -> None:
    rule = Rule.parse("mcp__github")
    assert rule_matches(rule, "mcp__github__create_issue", {}, CWD)
    assert not rule_matches(rule, "mcp__githubx__create_issue", {}, CWD)
    assert rule_matches(
        Rule.parse("mcp__github__create_issue"), "mcp__github__create_issue", {}, CWD
    )


def test_deny_beats_allow_whatever_the_order() -> None:
    rules = [("Bash(git:*)", "allow"), ("Bash(git push:*)", "deny")]
    assert decide_by_rules(rules, "Bash", {"command": "git push origin"}, CWD) == (
        "deny",
        "Bash(git push:*)",
    )
    assert decide_by_rules(rules[::-1], "Bash", {"command": "git push"}, CWD) == (
        "deny",
        "Bash(git push:*)",
    )
    assert decide_by_rules(rules, "Bash", {"command": "git status"}, CWD) == (
        "allow",
        "Bash(git:*)",
    )
    assert decide_by_rules(rules, "Bash", {"command": "ls"}, CWD) is None


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"command": "touch a"}, "Bash(touch:*)"),
        ("Bash", {"command": "git add -A"}, "Bash(git add:*)"),
        ("Bash", {"command": "npm run build"}, "Bash(npm run:*)"),
        ("Write", {"file_path": f"{CWD}/src/x.py"}, "Write(src/**)"),
        ("Edit", {"file_path": f"{CWD}/x.py"}, "Edit(**)"),
        ("mcp__srv__tool", {}, "mcp__srv__tool"),
    ],
)
def test_allow_always_suggestions(tool: str, tool_input: dict[str, str], expected: str) -> None:
    rule = suggest_rule(tool, tool_input, CWD)
    assert rule == expected
    # A suggestion always matches the call it was made for.
    assert rule_matches(Rule.parse(rule), tool, tool_input, CWD)


@pytest.mark.parametrize("bad", ["Bash(", "Bash(x", "(x)", "Bash()", "two words", ""])
def test_invalid_rules_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        Rule.parse(bad)
