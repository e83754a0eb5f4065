"""Turning stored events and agent text into HTML.

Agent output is untrusted: it may quote web pages, files or prompt-injected text. It
reaches the page only through Jinja autoescaping or through ``markdown_to_html``, which
never passes raw HTML through and keeps only http(s)/mailto links. The page render and
the SSE stream both use ``templates/_event.html``, so a reload shows what the stream
showed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.templating import Jinja2Templates
from jinja2 import ChainableUndefined, Environment, FileSystemLoader
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup
from pygments import highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

EventDict = dict[str, Any]

# Every kind the page knows how to show; the session page subscribes to exactly these
# SSE event names, so a kind added later is ignored by old pages instead of garbling them.
EVENT_KINDS: tuple[str, ...] = (
    "user_message",
    "text_delta",
    "assistant_message",
    "thought",
    "tool_call",
    "tool_result",
    "permission_request",
    "permission_decision",
    "turn_end",
    "backend_session",
    "session_info",
    "mode_changed",
    "error",
    "status",
    "queued_sent",
    "queued_dropped",
    "note",
    "plan",
    "usage",
    "commands",
    "title",
)
# EventSource also fires "error" for connection failures, so a stored ``error`` event is
# better sent under another name (``sse_event_name``); the page listens to both.
_SSE_NAMES = {"error": "agent_error"}
SSE_SWAP_EVENTS = ",".join([*EVENT_KINDS, *_SSE_NAMES.values()])


def sse_event_name(kind: str) -> str:
    """The SSE ``event:`` name for an event kind (``error`` would clash with EventSource's own)."""
    return _SSE_NAMES.get(kind, kind)


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

# Overrides (U+202A–U+202E) and isolates (U+2066–U+2069) can make text display in a
# different order from the one it runs in ("Trojan Source"). They are shown as U+FFFD
# instead of being dropped silently, so the reader sees that something was there.
_BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_TABLE = {ord(ch): "\ufffd" for ch in _BIDI_CONTROLS}

_SAFE_LINK = re.compile(r"^(?:https?://|mailto:)", re.IGNORECASE)
_LANG_CHARS = re.compile(r"[^A-Za-z0-9_+#.-]")
_LINK_REL = "noopener noreferrer nofollow"
# Highlighting is a nicety; beyond this size a block is shown as plain text so one huge
# paste cannot stall a page render.
_MAX_HIGHLIGHT_CHARS = 200_000
_MAX_DIFF_LINES = 400
# Tool output shown before "show all" (see split_output).
TOOL_OUTPUT_LINES = 200
TOOL_OUTPUT_CHARS = 20_000
# A thought longer than this after the event before it is not timed: the gap is more
# likely an idle session (or an import) than thinking.
_MAX_THOUGHT_MS = 30 * 60 * 1000

_FORMATTER = HtmlFormatter(nowrap=True)


def clean_text(text: str) -> str:
    """Make bidi control characters visible."""
    return text.translate(_BIDI_TABLE)


def is_safe_href(url: str) -> bool:
    """Only absolute http(s) and mailto links survive; everything else stays text."""
    return bool(_SAFE_LINK.match(url.strip()))


def highlight_code(code: str, lang: str) -> str:
    """HTML for a code block body: Pygments token spans, or escaped text."""
    if lang and len(code) <= _MAX_HIGHLIGHT_CHARS:
        try:
            lexer = get_lexer_by_name(lang)
        except ClassNotFound:
            lexer = None
        if lexer is not None:
            return str(highlight(code, lexer, _FORMATTER))
    return escapeHtml(code)


def _code_html(code: str, lang: str) -> str:
    lang = _LANG_CHARS.sub("", lang)[:40]
    label = f'<span class="code-lang">{escapeHtml(lang)}</span>' if lang else "<span></span>"
    code_class = f' class="language-{escapeHtml(lang)}"' if lang else ""
    return (
        '<div class="code">'
        f'<div class="code-bar">{label}'
        '<button type="button" class="copy" aria-label="Copy code">Copy</button></div>'
        f'<pre class="hl" tabindex="0"><code{code_class}>{highlight_code(code, lang)}</code></pre>'
        "</div>\n"
    )


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    info = token.info.strip()
    lang = info.split(maxsplit=1)[0] if info else ""
    return _code_html(token.content, lang)


def _render_code_block(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return _code_html(tokens[idx].content, "")


def _render_link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    href = token.attrGet("href")
    # validateLink already refused unsafe targets; checking again here means a future
    # parser rule that forgets to call it still cannot produce a script link.
    if not isinstance(href, str) or not is_safe_href(href):
        token.attrs.pop("href", None)
    else:
        token.attrSet("rel", _LINK_REL)
        token.attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # Remote images would be fetched the moment a transcript is opened, telling a third
    # party when it was read; they become plain links instead.
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src")
    if not isinstance(src, str) or not is_safe_href(src):
        return escapeHtml(alt)
    return (
        f'<a class="img-link" href="{escapeHtml(src)}" rel="{_LINK_REL}" target="_blank">'
        f"Image: {escapeHtml(alt)}</a>"
    )


class _SafeMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_href(url)


def _make_markdown() -> MarkdownIt:
    md = _SafeMarkdown("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_code_block)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    return md


_MD = _make_markdown()


def markdown_to_html(text: str) -> Markup:
    """Sanitized HTML for agent Markdown: raw HTML is escaped, never rendered."""
    return Markup(_MD.render(clean_text(text)))


# -- Jinja filters -------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def format_duration(ms: object) -> str:
    """Milliseconds as "850 ms", "2.8 s", "3 min 5 s" or "1 h 2 min"."""
    value = _number(ms)
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
    value = _number(usd)
    if value is None:
        return ""
    if abs(value) >= 1:
        return f"${value:,.2f}"
    text = f"{value:.4f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def format_tokens(count: object) -> str:
    """Token counts as "310", "1.2k", "3.4M"."""
    value = _number(count)
    if value is None:
        return ""
    if value < 1000:
        return f"{value:.0f}"
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def format_when(value: object) -> str:
    """A timestamp as "2026-12-02 14:00" (UTC); app.js shows it in local time."""
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


def day_label(moment: datetime, today: date | None = None) -> str:
    """ "Today", "Yesterday" or "Mon 30 Nov" for a stored (UTC) time, in local time."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    day = moment.astimezone().date()
    today = today or datetime.now().astimezone().date()
    if day == today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    year = f" {day.year}" if day.year != today.year else ""
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
            out.append(("hunk", line))
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


def command_names(value: object) -> list[str]:
    """Slash command names without their leading "/", deduplicated, in the given order."""
    if not isinstance(value, list | tuple):
        return []
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str):
            name = name.strip().lstrip("/")
            if name and name not in names and len(name) <= 100:
                names.append(name)
    return names


def _parse_at(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def thought_duration_ms(thought: EventDict, previous_at: object) -> int | None:
    """How long the agent thought, when it is known.

    A backend that times its thinking says so in ``duration_ms``. Otherwise a thought
    arrives whole when the thinking is over, so the time since the event before it (the
    prompt, a tool result) is how long it took.
    """
    known = _number(thought.get("duration_ms"))
    if known is not None:
        return int(known) if known >= 0 else None
    end, start = _parse_at(thought.get("at")), _parse_at(previous_at)
    if end is None or start is None:
        return None
    ms = int((end - start).total_seconds() * 1000)
    return ms if 0 <= ms <= _MAX_THOUGHT_MS else None


def with_thought_duration(event: EventDict, previous_at: object) -> EventDict:
    """``event`` with ``duration_ms`` filled in when it is a thought that can be timed."""
    if event.get("kind") != "thought" or "duration_ms" in event:
        return event
    ms = thought_duration_ms(event, previous_at)
    return event if ms is None else {**event, "duration_ms": ms}


_ADVICE_GIVEN = re.compile(
    r"send (?:a|the|your) message|start a new session|restore the folder|install",
    re.IGNORECASE,
)
_AUTH_PROBLEM = re.compile(
    r"not logged in|please log ?in|/login|authenticat|api[ _-]?key|unauthori[sz]ed|\b401\b"
    r"|credit balance",
    re.IGNORECASE,
)
_BUSY_PROBLEM = re.compile(r"rate.?limit|overloaded|\b429\b|\b529\b|too many requests", re.I)


def error_advice(event: EventDict) -> str:
    """What the user can do about an error card, unless its message already says so."""
    message = as_text(event.get("message"))
    if event.get("resume_failed") or _ADVICE_GIVEN.search(message):
        return ""
    if _AUTH_PROBLEM.search(message):
        return (
            "Check the CLI's login: run it once in a terminal and sign in, or put its API "
            "key in the profile's environment. Then send your message again."
        )
    if _BUSY_PROBLEM.search(message):
        return "The model's service is busy or rate-limited: wait a minute, then send again."
    return (
        "Send a message to start the agent again. If this keeps happening, open Details "
        "for the CLI's own output and check the profile's settings."
    )


def _markdown_filter(value: object) -> Markup:
    return markdown_to_html(as_text(value))


def _finalize(value: Any) -> Any:
    # Applied to every {{ }} output, so bidi controls in tool names, paths and
    # commands are caught too, not only in Markdown.
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return clean_text(value)
    return value


def make_templates(templates_dir: Path) -> Jinja2Templates:
    """The one Jinja environment: autoescaping on, every filter and global set here."""
    env = Environment(
        loader=FileSystemLoader(templates_dir),
        autoescape=True,
        # Event payloads vary by backend and age; a missing field renders as nothing.
        undefined=ChainableUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(
        markdown=_markdown_filter,
        duration=format_duration,
        cost=format_cost,
        tokens=format_tokens,
        when=format_when,
        iso=iso_time,
        pretty_json=pretty_json,
        as_text=as_text,
        line_count=line_count,
        head_lines=head_lines,
        credential=credential_label,
        home=home_path,
    )
    env.globals.update(
        app_name="Angelia",
        SSE_SWAP_EVENTS=SSE_SWAP_EVENTS,
        STATUS_LABELS=STATUS_LABELS,
        decision_text=decision_text,
        tool_icon=tool_icon,
        diff_lines=diff_lines,
        split_output=split_output,
        command_names=command_names,
        error_advice=error_advice,
        TOOL_STATE_LABELS=TOOL_STATE_LABELS,
        TOOL_OUTPUT_LINES=TOOL_OUTPUT_LINES,
    )
    return Jinja2Templates(env=env)


# -- Events ----------------------------------------------------------------------------


def fold_events(events: list[EventDict]) -> list[EventDict]:
    """Shape a stored event list for the page.

    - text deltas of a message that later completed are dropped (the full message
      follows);
    - the deltas of a message still streaming become one ``text_stream`` item at the
      position of its first delta, as the live page builds it;
    - a ``permission_request`` gets its ``permission_decision`` as ``decision`` (the
      decision event stays in the list);
    - a ``tool_call`` gets ``state``: done, failed, stopped (its turn ended without a
      result) or running;
    - a ``thought`` gets ``duration_ms`` when it can be timed (``thought_duration_ms``);
    - every ``plan`` but the newest gets ``superseded`` (each plan replaces the last).
    Input dicts are never modified.
    """
    completed: set[str] = set()
    dropped: set[int] = set()
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        kind = event.get("kind")
        if kind == "assistant_message":
            completed.add(str(event.get("message_id") or ""))
        elif kind == "text_delta" and str(event.get("message_id") or "") in completed:
            dropped.add(index)

    decisions: dict[str, EventDict] = {}
    results: dict[str, EventDict] = {}
    last_turn_end = -1
    last_plan = -1
    for index, event in enumerate(events):
        kind = event.get("kind")
        if kind == "permission_decision":
            decisions.setdefault(str(event.get("permission_id") or ""), event)
        elif kind == "tool_result":
            results.setdefault(str(event.get("tool_call_id") or ""), event)
        elif kind == "turn_end":
            last_turn_end = index
        elif kind == "plan":
            last_plan = index

    out: list[EventDict] = []
    streams: dict[str, tuple[EventDict, list[str]]] = {}
    for index, event in enumerate(events):
        if index in dropped:
            continue
        kind = event.get("kind")
        if kind == "text_delta":
            mid = str(event.get("message_id") or "")
            if mid not in streams:
                item: EventDict = {
                    "kind": "text_stream",
                    "message_id": mid,
                    "session_id": event.get("session_id"),
                    "at": event.get("at"),
                    "text": "",
                    "seq": event.get("seq"),
                }
                streams[mid] = (item, [])
                out.append(item)
            item, parts = streams[mid]
            parts.append(str(event.get("text") or ""))
            item["seq"] = event.get("seq")
        elif kind == "permission_request":
            item = dict(event)
            decision = decisions.get(str(event.get("permission_id") or ""))
            if decision is not None:
                item["decision"] = decision
            out.append(item)
        elif kind == "tool_call":
            item = dict(event)
            result = results.get(str(event.get("tool_call_id") or ""))
            if result is not None:
                item["state"] = "failed" if result.get("is_error") else "done"
            else:
                item["state"] = "stopped" if index < last_turn_end else "running"
            out.append(item)
        elif kind == "thought":
            previous = events[index - 1].get("at") if index else None
            out.append(with_thought_duration(event, previous))
        elif kind == "plan" and index < last_plan:
            out.append({**event, "superseded": True})
        else:
            out.append(event)
    for item, parts in streams.values():
        item["text"] = "".join(parts)
    return out


def render_event(templates: Jinja2Templates, event: EventDict, **context: Any) -> str:
    """One event as the HTML fragment the page would show for it (for SSE).

    Extra keyword arguments (e.g. ``install_hint``) are passed to the template.
    """
    template = templates.get_template("_event.html")
    return str(template.render({**context, "e": event}))
