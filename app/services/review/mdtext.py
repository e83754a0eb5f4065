"""Text put into a Markdown document so that no HTML in it is live where it is rendered.

Titles, messages and tool output come from agents, tools and other people's files. In
CommonMark (GitHub, editors, most viewers) every piece of raw HTML begins with ``<``, so
``<`` outside code blocks becomes ``&lt;``, which shows as ``<``. Code blocks stay
readable: each is fenced again here, with a fence longer than any run of backticks in it,
so its content is literal and cannot close it; a block left open is closed.
"""

from __future__ import annotations

import re

# A fence opens a code block: up to three spaces, then ``` or ~~~ (three or more).
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_LANG = re.compile(r"[\w+#.-]*")


def prose(text: str) -> str:
    """Markdown (a message, a plan) with its HTML made inert and its code blocks re-fenced."""
    out: list[str] = []
    lines = text.split("\n")
    plain: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened is None or (opened.group(2)[0] == "`" and "`" in opened.group(3)):
            plain.append(lines[i])
            i += 1
            continue
        indent, marker, info = len(opened.group(1)), opened.group(2), opened.group(3)
        body: list[str] = []
        i += 1
        # Until the closing fence, or the end of the text (then it is closed here).
        while i < len(lines) and not _closes(lines[i], marker):
            body.append(_dedent(lines[i], indent))
            i += 1
        i += 1
        if plain:
            out.append(inline("\n".join(plain)))
            plain = []
        lang = _LANG.match(info.strip())
        out.append(fence("\n".join(body), lang.group(0) if lang else ""))
    if plain:
        out.append(inline("\n".join(plain)))
    return "\n".join(out)


def inline(text: str) -> str:
    """Text outside code blocks, with every ``<`` escaped.

    Code spans are escaped too: which backticks pair up depends on the paragraphs and
    containers around them, and a guess that differs from the renderer's would leave a
    tag live; inside a code span ``&lt;`` shows as written, a small price."""
    return text.replace("<", "&lt;")


def fence(text: str, lang: str) -> str:
    """A fenced code block that ``text`` cannot close: its content shows literally."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def code(text: str) -> str:
    """One line as a code span that no backtick in it can end early.

    Its ``<`` is escaped all the same: a stray backtick in the text next to it could
    still pair with this span's own."""
    text = inline(one_line(text))
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def blockquote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines())


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] + (" …" if len(lines) > 1 else "") if lines else ""


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(marker)
        and set(stripped) == {marker[0]}
    )


def _dedent(line: str, indent: int) -> str:
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent) :]
