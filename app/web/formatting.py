"""Words and small formatters for the pages: labels, durations, costs, times, paths,
JSON, tool output and diffs.

Most take whatever an event payload holds (payloads vary by backend and age) and give ""
for what they cannot use. The templates reach them as filters and globals
(``render.make_templates``).
"""

from __future__ import annotations

import difflib
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from app.services.permissions.preview import hunk_header

DECISION_LABELS: dict[str, str] = {
    "allow_once": "Allowed once",
    "allow_always": "Always allowed",
    "deny": "Denied",
    "deny_stop": "Denied and stopped",
    "cancelled": "Cancelled",
    "expired": "Expired",
}
SOURCE_LABELS: dict[str, str] = {
    "user": "by you",
    "rule": "by a saved rule",
    "mode": "by the permission mode",
    "timeout": "after waiting too long",
    "cancel": "",
    "restart": "when the server restarted",
}
# Symbols from the basic fonts every desktop has; emoji may be missing offline. U+FE0E
# asks for the text form where a platform would otherwise draw an emoji.
TOOL_ICONS: dict[str, str] = {
    "read": "\u25a4",  # ▤
    "edit": "\u270e",  # ✎
    "delete": "\u2715",  # ✕
    "move": "\u21c4",  # ⇄
    "execute": "\u25b6\ufe0e",  # ▶
    "search": "\u2315",  # ⌕
    "fetch": "\u21e3",  # ⇣
    "think": "\u2026",  # …
    "other": "\u2699\ufe0e",  # ⚙
}
STATUS_LABELS: dict[str, str] = {
    "live": "live",
    "working": "working",
    "waiting": "waiting for you",
    "idle": "idle",
    "ended": "ended",
    "failed": "failed",
    "interrupted": "interrupted",
}


def shown_status(status: str, live: bool) -> str:
    """The status a sessions list shows: a running backend reads as "live" unless the
    stored status says what it is busy with."""
    return "live" if live and status not in ("working", "waiting") else status


# What the tool-call line says for each state (the mark itself is drawn by CSS). A call
# whose turn ended without a result was stopped: the user sees it as cancelled.
TOOL_STATE_LABELS: dict[str, str] = {
    "running": "running",
    "done": "done",
    "failed": "failed",
    "stopped": "cancelled",
}
# Claude Code's ``apiKeySource`` values in words; anything else is shown as it came.
CREDENTIAL_LABELS: dict[str, str] = {
    "none": "login (no API key)",
    "ANTHROPIC_API_KEY": "API key from ANTHROPIC_API_KEY",
    "apiKeyHelper": "API key from apiKeyHelper",
    "/login managed key": "API key from /login",
    "user": "API key (user settings)",
    "project": "API key (project settings)",
    "org": "API key (organisation)",
    "temporary": "temporary API key",
}
_MAX_DIFF_LINES = 400
# Tool output shown before "show all" (see split_output).
TOOL_OUTPUT_LINES = 200
TOOL_OUTPUT_CHARS = 20_000


def as_number(value: object) -> float | None:
    """A JSON number as a float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def format_duration(ms: object) -> str:
    """Milliseconds as "850 ms", "2.8 s", "3 min 5 s" or "1 h 2 min"."""
    value = as_number(ms)
    if value is None or value < 0:
        return ""
    if value < 1000:
        return f"{value:.0f} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def format_cost(usd: object) -> str:
    """Dollars: "$0.0123" for small amounts (where cents hide everything), "$1.50" above $1."""
    value = as_number(usd)
    if value is None:
        return ""
    if abs(value) >= 1:
        return f"${value:,.2f}"
    text = f"{value:.4f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def format_tokens(count: object) -> str:
    """Token counts as "310", "1.2k", "3.4M"."""
    value = as_number(count)
    if value is None:
        return ""
    if value < 1000:
        return f"{value:.0f}"
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def format_when(value: object) -> str:
    """A timestamp as "2026-12-02 14:00" (UTC); the page script shows it in local time."""
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if moment is None:
        return ""
    return moment.strftime("%Y-%m-%d %H:%M")


def relative_time(value: object, now: datetime | None = None) -> str:
    """How far a stored (UTC) time is from now, in words: "3 minutes ago", "in 29 days"."""
    if not isinstance(value, datetime):
        return ""
    moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if abs(seconds) < 60:
        return "just now"
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        count = int(abs(seconds) // size)
        if count:
            words = f"{count} {unit}{'' if count == 1 else 's'}"
            return f"{words} ago" if seconds > 0 else f"in {words}"
    return "just now"


def day_label(moment: datetime, today: date | None = None) -> str:
    """ "Today", "Yesterday" or "Mon 30 Nov" for a stored (UTC) time, in local time."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return day_name(moment.astimezone().date(), today or datetime.now().astimezone().date())


def day_name(day: date, today: date, *, long: bool = False) -> str:
    """ "Today", "Yesterday", else "Mon 30 Nov" (``long``: "Monday, 30 November"); the year
    is added when it is not this one."""
    if day == today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    year = f" {day.year}" if day.year != today.year else ""
    if long:
        return f"{day:%A}, {day.day} {day:%B}{year}"
    return f"{day:%a} {day.day} {day:%b}{year}"


def iso_time(value: object) -> str:
    """A machine-readable timestamp for ``<time datetime>``; naive values are UTC."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text if value.tzinfo else text + "Z"
    return value if isinstance(value, str) else ""


def home_path(value: object) -> str:
    """A path with the user's home folder shortened to "~", as a shell prompt shows it."""
    text = as_text(value)
    home = str(Path.home()).rstrip("/")
    if home and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home) :]
    return text


def relative_to(path: object, root: object) -> str:
    """``path`` relative to the folder ``root`` when it lies inside it, else unchanged."""
    text = as_text(path)
    base = root.rstrip("/") if isinstance(root, str) else ""
    if base and text.startswith(base + "/"):
        return text[len(base) + 1 :]
    return text


def pretty_json(value: object) -> str:
    """Indented JSON as plain text; autoescaping makes it safe in the page."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return pretty_json(value)


def line_count(value: object) -> int:
    text = as_text(value)
    return text.count("\n") + 1 if text else 0


def head_lines(value: object, count: int = 200) -> str:
    return "\n".join(as_text(value).split("\n")[:count])


def split_output(
    value: object, lines: int = TOOL_OUTPUT_LINES, chars: int = TOOL_OUTPUT_CHARS
) -> tuple[str, str]:
    """A tool output as (what is shown at once, the rest behind "show all").

    Laying out thousands of lines at once is what makes a page stutter, so only the
    head is in the open; the rest sits in a closed ``<details>``, which the browser does
    not lay out until it is opened. ``chars`` caps the head too, for outputs made of a
    few enormous lines. The rest drops the newline the head ended before, so opening
    it reads as one continuous output.
    """
    text = as_text(value)
    head = "\n".join(text.split("\n", lines)[:lines])
    if len(head) > chars:
        cut = head.rfind("\n", 0, chars)
        head = head[: cut if cut > chars // 2 else chars]
    rest = text[len(head) :]
    return head, rest[1:] if rest.startswith("\n") else rest


def diff_lines(old: object, new: object) -> list[tuple[str, str]]:
    """(kind, line) pairs for an edit: kind is hunk, add, del or ctx."""
    before = as_text(old).splitlines()
    after = as_text(new).splitlines()
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(before, after, lineterm="", n=3):
        if line.startswith(("---", "+++")) and not out:
            continue
        if line.startswith("@@"):
            # Numbered from the snippet, not the file, the numbers would be wrong.
            out.append(("hunk", hunk_header(line, None)))
        elif line.startswith("+"):
            out.append(("add", line[1:]))
        elif line.startswith("-"):
            out.append(("del", line[1:]))
        else:
            out.append(("ctx", line[1:]))
        if len(out) >= _MAX_DIFF_LINES:
            out.append(("hunk", "… diff truncated"))
            break
    return out


def decision_text(decision: object, source: object = None) -> str:
    """Who decided what, e.g. "Allowed once by you" or "Denied by a saved rule"."""
    label = DECISION_LABELS.get(str(decision or ""), str(decision or "Answered").capitalize())
    who = SOURCE_LABELS.get(str(source or ""), f"by {source}" if source else "")
    return f"{label} {who}".strip()


def tool_icon(kind: object) -> str:
    return TOOL_ICONS.get(str(kind or "other"), TOOL_ICONS["other"])


def credential_label(source: object) -> str:
    """Claude Code's ``apiKeySource`` in words ("" when it reported none)."""
    text = str(source or "")
    return CREDENTIAL_LABELS.get(text, text)
