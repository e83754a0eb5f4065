"""A profile's deny rules as Codex's own ``forbidden`` command prefixes.

Codex runs ordinary commands in its sandbox without asking, so the app cannot refuse them
by answering a question. Codex's exec policy can: a ``prefix_rule(pattern=[...],
decision="forbidden")`` in ``$CODEX_HOME/rules/default.rules`` makes Codex refuse every
command starting with those words, also as a part of ``a && b`` or ``a; b`` and by a path
such as ``/bin/rm`` (measured with codex 0.166). So a ``Bash(<prefix>:*)`` deny rule
becomes such a line; every other deny rule (a whole tool, a file glob, an exact command)
has no Codex equivalent and is refused with the reason.

The rules file also holds the "allow always" prefixes Codex saves itself; Angelia rewrites
only its own marked block in it, at each start.

MCP deny rules are kept by leaving things out rather than by answering: in full access
Codex calls MCP tools without asking. A profile's ``mcp__<server>`` keeps that server from
Codex altogether, and ``mcp__<server>__<tool>`` becomes ``disabled_tools`` of the server,
which then goes into the session's ``config.toml`` (``mcp_entry``) instead of to
codex-acp: Codex honours that list in every mode, and refuses an entry holding only it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "deny_refusal",
    "forbidden_prefix",
    "mcp_denials",
    "mcp_entry",
    "write_rules",
]

BLOCK_START = "# >>> Angelia: the profile's deny rules (rewritten at each start) >>>"
BLOCK_END = "# <<< Angelia: the profile's deny rules <<<"
# A command word Codex's policy can match literally (no globs, quotes or expansions).
_WORD = re.compile(r"^[A-Za-z0-9_./+@%=,:-]+$")
_PREFIX_SPEC = re.compile(r"^Bash\((?P<prefix>.+):\*\)$")


def forbidden_prefix(rule: str) -> list[str] | None:
    """The words of a ``Bash(<prefix>:*)`` rule (None: not a rule Codex can keep)."""
    m = _PREFIX_SPEC.match(rule.strip())
    if m is None:
        return None
    try:
        words = shlex.split(m.group("prefix"))
    except ValueError:
        return None
    if not words or not all(_WORD.match(w) for w in words):
        return None
    return words


def deny_refusal(rule: str, tool: str, label: str, unasked: frozenset[str]) -> str | None:
    """Why the deny ``rule`` (for ``tool``) cannot be kept by Codex (None: it can);
    ``unasked``: the tools Codex runs without asking."""
    if forbidden_prefix(rule) is not None or tool not in unasked:
        return None
    if tool == "Bash" and rule != tool:
        return (
            f"{label} can refuse a command only by its first words, as Bash(rm:*) or "
            f"Bash(git push:*); {rule} is not such a rule, so it is not accepted."
        )
    return (
        f"{label} runs {tool} without asking, so Angelia cannot refuse it; the deny rule "
        f"{rule} is not accepted (only Bash(<command>:*) rules are)."
    )


def mcp_denials(
    disallowed: Iterable[str], servers: Iterable[str]
) -> tuple[set[str], dict[str, list[str]]]:
    """Which of the profile's MCP ``servers`` its deny rules name whole, and the tools they
    deny on each of the others, matched as the app's rules match ``mcp__<server>__<tool>``
    (a whole-server rule has no ``__`` after the server)."""
    names = list(servers)
    whole: set[str] = set()
    tools: dict[str, list[str]] = {}
    for rule in (r.strip() for r in disallowed):
        for server in names:
            own = f"mcp__{server}__"
            if rule == f"mcp__{server}" and "__" not in server:
                whole.add(server)
            elif rule.startswith(own) and len(rule) > len(own):
                tools.setdefault(server, []).append(rule[len(own) :])
    return whole, {s: sorted(set(t)) for s, t in tools.items() if s not in whole}


def mcp_entry(name: str, spec: Mapping[str, Any], disabled: list[str]) -> dict[str, Any]:
    """The ``config.toml`` table of the profile's MCP server ``name`` (its profile entry
    ``spec``), with the tools Codex must not call on it.

    Raises:
        ValueError: The entry is malformed or of a kind Codex cannot use.
    """
    kind = str(spec.get("type") or "stdio")
    entry: dict[str, Any]
    if kind == "stdio" and isinstance(spec.get("command"), str) and spec["command"]:
        entry = {
            "command": spec["command"],
            "args": [str(a) for a in spec.get("args") or []],
            "env": _strings(spec.get("env")),
        }
    elif kind == "http" and isinstance(spec.get("url"), str) and spec["url"]:
        entry = {"url": spec["url"], "http_headers": _strings(spec.get("headers"))}
    else:
        raise ValueError(f"Codex cannot use the MCP server {name!r} of the profile.")
    return {**entry, "disabled_tools": list(disabled)}


def _strings(pairs: object) -> dict[str, str]:
    items = pairs.items() if isinstance(pairs, Mapping) else []
    return {str(k): str(v) for k, v in items}


def rules_block(disallowed: tuple[str, ...]) -> str:
    """The marked block of ``forbidden`` prefix rules for the rules Codex can keep."""
    lines = []
    for rule in disallowed:
        words = forbidden_prefix(rule)
        if words is not None:
            reason = json.dumps(f"Denied by the rule {rule} of this Angelia profile.")
            lines.append(
                f'prefix_rule(pattern={json.dumps(words)}, decision="forbidden", '
                f"justification={reason})"
            )
    if not lines:
        return ""
    return "\n".join([BLOCK_START, *lines, BLOCK_END]) + "\n"


def write_rules(home: Path, disallowed: tuple[str, ...]) -> None:
    """Put the profile's deny rules into ``home/rules/default.rules``, keeping every line
    Codex wrote there itself (its "allow always" prefixes).

    Raises:
        OSError: The file could not be read or written.
    """
    path = home / "rules" / "default.rules"
    kept = _without_block(path.read_text("utf-8")) if path.is_file() else ""
    block = rules_block(disallowed)
    if not block and not path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = block + kept if block else kept
    tmp = path.with_name(path.name + ".angelia-tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(path)


def _without_block(text: str) -> str:
    out: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == BLOCK_START:
            inside = True
        elif inside and line.rstrip("\n") == BLOCK_END:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)
