"""Export a session as JSON (complete, re-importable) or Markdown (for reading).

The JSON document holds the session, its profile and every event as the API shows it;
``export_import.import_json_export`` reads it back into a new session with the same events.
Secrets a profile may hold (environment values, MCP server env and headers) are left out
of it, since an export is made to be kept or passed on.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import Engine

from app.db.models import ChatSession, Profile, utcnow
from app.schemas import ProfilePublic, SessionPublic
from app.services.review.mdtext import blockquote, code, fence, inline, one_line, prose
from app.services.store import store
from app.services.store.eventlog import EventLog

FORMAT = "angelia.session.v1"
REDACTED = "[redacted]"

JsonDict = dict[str, Any]


def export_document(engine: Engine, events: EventLog, session_id: str) -> JsonDict:
    """The whole session as one JSON-ready dict."""
    chat = store.get_session(engine, session_id)
    profile = store.get_profile(engine, chat.profile_id)
    return {
        "format": FORMAT,
        "exported_at": _iso(utcnow()),
        "session": SessionPublic.model_validate(chat, from_attributes=True).model_dump(mode="json"),
        "profile": _redacted(
            ProfilePublic.model_validate(profile, from_attributes=True).model_dump(mode="json")
        ),
        "events": events.list(session_id),
    }


def export_markdown(engine: Engine, events: EventLog, session_id: str) -> str:
    """A readable transcript of the session."""
    chat = store.get_session(engine, session_id)
    profile = store.get_profile(engine, chat.profile_id)
    return _Markdown(chat, profile).render(events.list(session_id))


def export_filename(title: str, session_id: str, ext: str) -> tuple[str, str]:
    """(ASCII filename, UTF-8 filename) built from the title, safe in any file system."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    plain = _slug(ascii_title, r"[^A-Za-z0-9._-]+")
    wide = _slug(title, r"[^\w.-]+")
    tail = f"{session_id[:8]}.{ext}"
    return (
        f"{plain}-{tail}" if plain else f"session-{tail}",
        f"{wide}-{tail}" if wide else f"session-{tail}",
    )


def content_disposition(title: str, session_id: str, ext: str) -> str:
    plain, wide = export_filename(title, session_id, ext)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(wide)}"


def _slug(text: str, unsafe: str) -> str:
    slug = re.sub(unsafe, "-", text).strip("-._")
    return re.sub(r"-{2,}", "-", slug)[:60].rstrip("-._")


def _redacted(profile: JsonDict) -> JsonDict:
    profile["env"] = dict.fromkeys(profile.get("env") or {}, REDACTED)
    servers: JsonDict = {}
    for name, spec in (profile.get("mcp_servers") or {}).items():
        spec = dict(spec) if isinstance(spec, dict) else {}
        for key in ("env", "headers"):
            if isinstance(spec.get(key), dict):
                spec[key] = dict.fromkeys(spec[key], REDACTED)
        servers[name] = spec
    profile["mcp_servers"] = servers
    return profile


# -- Markdown --------------------------------------------------------------------------
OUTPUT_LINES = 80
OUTPUT_CHARS = 6000
_DECISIONS = {
    "allow_once": "allowed once",
    "allow_always": "always allowed",
    "deny": "denied",
    "deny_stop": "denied and stopped",
    "cancelled": "cancelled",
    "expired": "expired",
}
# Stop reasons of a turn that ended the ordinary way; any other one is shown.
_PLAIN_STOPS = frozenset({"", "end_turn", "success", "stop", "tool_use"})
_SOURCES = {
    "user": "by user",
    "mode": "by the permission mode",
    "timeout": "after waiting too long",
    "restart": "when the server stopped",
}


def fold(items: list[JsonDict]) -> list[JsonDict]:
    """Drop the text deltas of completed messages; join the rest into one item each.

    A message whose ``assistant_message`` never arrived (a crash, an interrupt) is
    known only from its deltas, which become one ``text_stream`` item where it began.
    """
    done = {str(e.get("message_id") or "") for e in items if e["kind"] == "assistant_message"}
    out: list[JsonDict] = []
    streams: dict[str, JsonDict] = {}
    for e in items:
        if e["kind"] != "text_delta":
            out.append(e)
            continue
        mid = str(e.get("message_id") or "")
        if mid in done:
            continue
        if mid not in streams:
            streams[mid] = {"kind": "text_stream", "message_id": mid, "text": ""}
            out.append(streams[mid])
        streams[mid]["text"] += str(e.get("text") or "")
    return out


class _Markdown:
    def __init__(self, chat: ChatSession, profile: Profile) -> None:
        self.chat = chat
        self.profile = profile
        self.parts: list[str] = []
        self.speaker = ""
        # Bookkeeping kinds (session_info, backend_session, status, …) are left out.
        self._renderers: dict[str, Callable[[JsonDict], None]] = {
            "user_message": self._user_message,
            "assistant_message": self._assistant_message,
            "text_stream": self._text_stream,
            "thought": self._thought,
            "tool_call": self._tool_call,
            "tool_result": self._tool_result,
            "turn_end": self._turn_end,
            "error": self._error,
            "note": self._note,
            "mode_changed": self._mode_changed,
            "model_changed": self._model_changed,
            "rewind": self._rewind,
        }

    def render(self, items: list[JsonDict]) -> str:
        self._header(items)
        decisions = {
            str(e.get("permission_id")): e for e in items if e["kind"] == "permission_decision"
        }
        asked = {str(e.get("permission_id")) for e in items if e["kind"] == "permission_request"}
        for e in fold(items):
            kind = e["kind"]
            if kind == "permission_request":
                self._permission(e, decisions.get(str(e.get("permission_id"))))
            elif kind == "permission_decision":
                # Shown with its request; on its own only if the request is missing.
                if str(e.get("permission_id")) not in asked:
                    self._permission(e, e)
            elif (render := self._renderers.get(kind)) is not None:
                render(e)
        return "\n\n".join(p for p in self.parts if p).rstrip() + "\n"

    def _header(self, items: list[JsonDict]) -> None:
        chat, profile = self.chat, self.profile
        model = (
            chat.model
            or profile.model
            or next((str(e["model"]) for e in reversed(items) if e["kind"] == "session_info"), "")
        )
        facts = [
            ("Backend", _line(chat.backend)),
            ("Model", _line(model) or "default"),
            ("Folder", code(profile.cwd)),
            ("Profile", _line(profile.name)),
            ("Started", _iso(chat.created_at)),
            ("Turns", str(chat.turns)),
            ("Tokens", f"{chat.input_tokens:,} in / {chat.output_tokens:,} out"),
        ]
        if chat.cost_usd:
            facts.append(("Cost", _cost(chat.cost_usd)))
        if chat.backend_session_id:
            facts.append(("Backend session", code(chat.backend_session_id)))
        self.parts.append(f"# {_line(chat.title) or 'Untitled session'}")
        self.parts.append("\n".join(f"- **{k}:** {v}" for k, v in facts))
        self.parts.append("---")

    def _assistant_heading(self) -> None:
        if self.speaker != "assistant":
            self.speaker = "assistant"
            self.parts.append("### Assistant")

    def _user_message(self, e: JsonDict) -> None:
        self.speaker = "user"
        self.parts += ["### You", prose(str(e.get("text") or ""))]

    def _assistant_message(self, e: JsonDict) -> None:
        self._assistant_heading()
        self.parts.append(prose(str(e.get("text") or "")))

    def _text_stream(self, e: JsonDict) -> None:
        self._assistant_message(e)
        self.parts.append("*(message incomplete)*")

    def _thought(self, e: JsonDict) -> None:
        self._assistant_heading()
        self.parts.append(blockquote(f"**Thinking**\n\n{prose(str(e.get('text') or ''))}"))

    def _tool_call(self, e: JsonDict) -> None:
        self._assistant_heading()
        tool, data = inline(str(e.get("tool") or "tool")), e.get("input")
        data = data if isinstance(data, dict) else {}
        title = str(e.get("title") or "")
        command = data.get("command")
        if isinstance(command, str):
            # The command itself follows; its description says what it is for.
            about = str(data.get("description") or "")
            line = f"**Tool: {tool}**" + (f" — {_line(about)}" if about else "")
            body = fence(_truncate(command), "bash")
        else:
            line = f"**Tool: {tool}**" + (f" — {code(title)}" if title and title != tool else "")
            body = fence(_truncate(json.dumps(data, indent=2, ensure_ascii=False)), "json")
        self.parts += [line, body]

    def _tool_result(self, e: JsonDict) -> None:
        label = "Error output" if e.get("is_error") else "Output"
        output = e.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        self.parts += [f"*{label}:*", fence(_truncate(text), "")]

    def _permission(self, request: JsonDict, decision: JsonDict | None) -> None:
        tool = inline(str(request.get("tool") or "tool"))
        data = request.get("input")
        subject = _subject(data if isinstance(data, dict) else {}) or str(
            request.get("title") or ""
        )
        line = f"**Permission:** {tool}" + (f" {code(subject)}" if subject else "")
        if decision is None:
            line += " — no answer recorded"
        else:
            verdict = _DECISIONS.get(str(decision.get("decision")), str(decision.get("decision")))
            source = str(decision.get("source") or "")
            who = _SOURCES.get(source, f"by {source}" if source not in ("", "cancel") else "")
            if source == "rule" and decision.get("rule"):
                who = f"by the rule {code(str(decision['rule']))}"
            line += f" — {inline(verdict)} {inline(who)}".rstrip()
            if decision.get("message"):
                line += f" ({_line(str(decision['message']))})"
            if decision.get("mode"):
                line += f", continuing in {code(str(decision['mode']))}"
        self.parts.append(line)
        answers = decision.get("answers") if decision is not None else None
        if isinstance(answers, dict) and answers:
            self.parts.append(
                "\n".join(f"- {_line(str(q))} → {_line(str(a))}" for q, a in answers.items())
            )
        plan = data.get("plan") if isinstance(data, dict) else None
        if request.get("prompt") == "plan" and isinstance(plan, str) and plan.strip():
            self.parts.append(blockquote(f"**Plan**\n\n{prose(plan)}"))

    def _turn_end(self, e: JsonDict) -> None:
        usage = e["usage"] if isinstance(e.get("usage"), dict) else {}
        facts = ["Turn ended"]
        if isinstance(e.get("duration_ms"), int | float):
            facts.append(_duration(float(e["duration_ms"])))
        if isinstance(e.get("cost_usd"), int | float):
            facts.append(_cost(float(e["cost_usd"])))
        if any(isinstance(usage.get(k), int) for k in ("input_tokens", "output_tokens")):
            facts.append(
                f"{usage.get('input_tokens') or 0:,} in / {usage.get('output_tokens') or 0:,} out"
            )
        line = f"*{' · '.join(facts)}*"
        if e.get("is_error"):
            line += " — **ended with an error**"
        stop = str(e.get("stop_reason") or "")
        if stop not in _PLAIN_STOPS:
            line += f" ({inline(stop)})"
        errors = [f"- {_line(str(x))}" for x in e.get("errors") or []]
        self.parts += [line, "\n".join(errors), "---"]
        self.speaker = ""

    def _error(self, e: JsonDict) -> None:
        self.parts.append(blockquote(f"**Error:** {prose(str(e.get('message') or ''))}"))
        if e.get("detail"):
            self.parts.append(fence(_truncate(str(e["detail"])), ""))

    def _note(self, e: JsonDict) -> None:
        label = {
            "compact_summary": "Summary of the earlier conversation",
            "unknown_line": "A transcript line of a type Angelia does not know",
        }.get(str(e.get("note")), "Note")
        self.parts.append(blockquote(f"**{label}**\n\n{prose(str(e.get('text') or ''))}"))

    def _mode_changed(self, e: JsonDict) -> None:
        self.parts.append(f"*Permission mode: {inline(str(e.get('mode')))}*")

    def _model_changed(self, e: JsonDict) -> None:
        self.parts.append(f"*Model: {code(str(e.get('model') or ''))}*")

    def _rewind(self, e: JsonDict) -> None:
        files = [str(f) for f in e.get("files") or []]
        listed = ", ".join(code(f) for f in files) if files else "no files changed"
        self.parts.append(
            f"*Files rewound to before message {inline(str(e.get('event_seq')))}: {listed}*"
        )


def _line(text: str) -> str:
    return inline(one_line(text))


def _subject(data: JsonDict) -> str:
    for key in ("command", "file_path", "notebook_path", "pattern", "url", "query"):
        if isinstance(data.get(key), str) and data[key].strip():
            return one_line(data[key])
    return ""


def _truncate(full: str) -> str:
    lines = full.splitlines()
    text, note = full, ""
    if len(lines) > OUTPUT_LINES:
        text = "\n".join(lines[:OUTPUT_LINES])
        note = f"first {OUTPUT_LINES} of {len(lines):,} lines shown"
    if len(text) > OUTPUT_CHARS:
        text = text[:OUTPUT_CHARS]
        note = f"first {OUTPUT_CHARS:,} of {len(full):,} characters shown"
    return f"{text}\n… [truncated: {note}]" if note else text


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def _cost(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def dumps(document: JsonDict) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2)
