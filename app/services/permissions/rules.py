"""Permission rules in Claude Code's own syntax, matched against a tool call.

``Bash(git add:*)`` matches commands starting with ``git add``; ``Bash(npm test)`` only
that exact command; ``Edit(src/**)`` file tools whose path (relative to the profile's
folder) matches the glob; ``Read`` every call of a tool; ``mcp__server`` every tool of
that MCP server. Deny rules beat allow rules.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from app.schemas import validate_rule

FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
_RULE_PARTS = re.compile(r"^(?P<tool>[^()]+)(?:\((?P<spec>.*)\))?$")


@dataclass(frozen=True)
class Rule:
    tool: str
    spec: str | None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = validate_rule(text)
        m = _RULE_PARTS.match(text)
        assert m is not None  # validate_rule accepted it
        return cls(tool=m.group("tool"), spec=m.group("spec"))

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"


def _tool_matches(rule_tool: str, tool: str) -> bool:
    if rule_tool == tool:
        return True
    # `mcp__server` covers every tool of that server.
    return (
        rule_tool.startswith("mcp__")
        and rule_tool.count("__") == 1
        and (tool.startswith(rule_tool + "__"))
    )


@lru_cache(maxsize=512)
def _glob_regex(glob: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def _relative(path: str, cwd: str) -> str:
    p = PurePosixPath(path)
    if p.is_absolute():
        try:
            return str(p.relative_to(cwd))
        except ValueError:
            return str(p)
    return str(p)


def file_path_of(tool_input: dict[str, Any]) -> str | None:
    for key in ("file_path", "path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def rule_matches(rule: Rule, tool: str, tool_input: dict[str, Any], cwd: str) -> bool:
    if not _tool_matches(rule.tool, tool):
        return False
    if rule.spec is None:
        return True
    if tool == "Bash":
        command = str(tool_input.get("command", "")).strip()
        if rule.spec.endswith(":*"):
            prefix = rule.spec[:-2].strip()
            return command == prefix or command.startswith(prefix + " ")
        return command == rule.spec.strip()
    if tool in FILE_TOOLS:
        path = file_path_of(tool_input)
        if path is None:
            return False
        spec = rule.spec
        candidate = path if spec.startswith("/") else _relative(path, cwd)
        return bool(_glob_regex(spec).match(candidate))
    if tool in ("WebFetch", "WebSearch") and rule.spec.startswith("domain:"):
        url = str(tool_input.get("url", ""))
        host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].split(":", 1)[0]
        domain = rule.spec.removeprefix("domain:")
        return host == domain or host.endswith("." + domain)
    return False


def decide_by_rules(
    rules: list[tuple[str, str]], tool: str, tool_input: dict[str, Any], cwd: str
) -> tuple[str, str] | None:
    """The first matching (decision, rule); any matching deny beats every allow."""
    allow: tuple[str, str] | None = None
    for text, decision in rules:
        try:
            rule = Rule.parse(text)
        except ValueError:
            continue
        if rule_matches(rule, tool, tool_input, cwd):
            if decision == "deny":
                return ("deny", text)
            allow = allow or ("allow", text)
    return allow


def suggest_rule(tool: str, tool_input: dict[str, Any], cwd: str) -> str:
    """The rule "Allow always" stores: scoped like Claude Code's own suggestions."""
    if tool == "Bash":
        command = str(tool_input.get("command", "")).strip()
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if not words:
            return "Bash"
        # `git add x` → `git add:*`; `touch a` → `touch:*`. Anything else is remembered
        # exactly: `rm -rf build` must not become permission for every `rm`.
        if words[0] in _SUBCOMMAND_TOOLS:
            if len(words) > 1 and re.match(r"^[a-z][a-z0-9-]*$", words[1]):
                return f"Bash({words[0]} {words[1]}:*)"
            return f"Bash({command})"
        if words[0] in _CREATE_ONLY_TOOLS:
            return f"Bash({words[0]}:*)"
        return f"Bash({command})"
    if tool in FILE_TOOLS:
        path = file_path_of(tool_input)
        if path:
            rel = _relative(path, cwd)
            parent = str(PurePosixPath(rel).parent)
            if PurePosixPath(rel).is_absolute():
                return f"{tool}({parent}/**)"
            return f"{tool}(**)" if parent == "." else f"{tool}({parent}/**)"
    return tool


# Commands that only create or read things; a prefix rule for them is a small grant.
_CREATE_ONLY_TOOLS = frozenset(
    {"touch", "mkdir", "ls", "cat", "head", "tail", "wc", "echo", "pwd", "grep", "rg", "find"}
)
_SUBCOMMAND_TOOLS = frozenset(
    {
        "git", "npm", "npx", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "pip",
        "uv", "poetry", "make", "python", "python3", "node", "gh", "brew", "apt", "apt-get",
    }
)  # fmt: skip
