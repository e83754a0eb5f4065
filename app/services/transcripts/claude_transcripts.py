"""Claude Code's transcript files, read and turned into Angelia's events.

A transcript (``<projects>/<slug>/<session-id>.jsonl``) is one JSON object per line:
conversation entries linked by ``parentUuid`` plus bookkeeping lines. The conversation
is rebuilt the way the Agent SDK's ``get_session_messages()`` does it: from the newest
leaf that is not a sidechain, up the ``parentUuid`` links, keeping user and assistant
entries that are not meta. Nothing here touches the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.brains.claude.protocol import ClaudeStreamParser
from app.brains.events import BrainEvent, TurnEnded
from app.services.store.store import title_from_message
from app.services.transcripts.claude_reader import JsonDict, RawLine, Transcript

Emitted = tuple[str, JsonDict]

# How much of an unknown line is shown; the rest is in the file.
RAW_LIMIT = 4000

_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]")
# Prompts the CLI writes on the user's behalf; none of them names what a session is about.
_NOT_A_PROMPT = re.compile(
    r"^(?:<local-command-stdout>|<session-start-hook>|<tick>|<goal>|"
    r"\[Request interrupted by user|\s*<ide_opened_file>|\s*<ide_selection>)"
)
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_COMMAND_OUTPUT = re.compile(r"<local-command-stdout>(.*?)</local-command-stdout>", re.DOTALL)


def main_thread(entries: list[JsonDict]) -> list[JsonDict]:
    """The conversation as the CLI would resume it, root first (see module docstring)."""
    by_uuid = {e["uuid"]: e for e in entries}
    position = {e["uuid"]: i for i, e in enumerate(entries)}
    parents = {e.get("parentUuid") for e in entries}
    leaves: list[JsonDict] = []
    for terminal in (e for e in entries if e["uuid"] not in parents):
        current: JsonDict | None = terminal
        seen: set[str] = set()
        while current is not None and current["uuid"] not in seen:
            seen.add(current["uuid"])
            if current.get("type") in ("user", "assistant"):
                leaves.append(current)
                break
            current = by_uuid.get(current.get("parentUuid") or "")
    main = [e for e in leaves if not (e.get("isSidechain") or e.get("teamName") or e.get("isMeta"))]
    if not (main or leaves):
        return []
    leaf = max(main or leaves, key=lambda e: position[e["uuid"]])
    chain: list[JsonDict] = []
    seen_chain: set[str] = set()
    node: JsonDict | None = leaf
    while node is not None and node["uuid"] not in seen_chain:
        seen_chain.add(node["uuid"])
        chain.append(node)
        node = by_uuid.get(node.get("parentUuid") or "")
    chain.reverse()
    return _with_parallel_siblings(chain, entries)


def _with_parallel_siblings(chain: list[JsonDict], entries: list[JsonDict]) -> list[JsonDict]:
    # Parallel tool calls can fork the chain: the other tool_use blocks of one response,
    # or the results of calls the chain's branch does not answer, hang off a side branch.
    kept = {e["uuid"] for e in chain}
    message_ids = {_message(e).get("id") for e in chain if e.get("type") == "assistant"}
    calls = {b.get("id") for e in chain for b in _blocks(e) if b.get("type") == "tool_use"}
    answered = {b.get("tool_use_id") for e in chain for b in _blocks(e) if _is_result(b)}
    children: dict[str, list[JsonDict]] = {}
    for e in entries:
        if e["uuid"] not in kept and not e.get("isSidechain"):
            children.setdefault(e.get("parentUuid") or "", []).append(e)
    todo = list(chain)
    while todo:
        for child in children.get(todo.pop()["uuid"], ()):
            blocks = _blocks(child)
            ids = {b.get("tool_use_id") for b in blocks if _is_result(b)}
            if child.get("type") == "assistant":
                wanted = _message(child).get("id") in message_ids
            else:
                wanted = bool(ids) and len(ids) == len(blocks) and ids <= calls - answered
            if wanted and child["uuid"] not in kept:
                kept.add(child["uuid"])
                calls |= {b.get("id") for b in blocks if b.get("type") == "tool_use"}
                answered |= ids
                todo.append(child)
    # Every entry is written after its parent, so file order is also thread order.
    return [e for e in entries if e["uuid"] in kept]


# -- turning entries into events ------------------------------------------------------
@dataclass
class _Turn:
    started: str
    ended: str = ""
    last_uuid: str = ""
    stop_reason: str = "end_turn"
    is_error: bool = False
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    model: str = ""
    # False once the model has answered without asking for a tool: the turn is over.
    waiting: bool = True


class EventBuilder:
    """Maps thread entries to events and closes each turn with a ``turn_end`` footer.

    Transcripts have no ``result`` lines, so turns are inferred: a real prompt starts
    one, agent output continues it (or starts one when the prompt was imported
    earlier), and a compact summary or a slash command ends it. The footer's duration
    spans the turn's timestamps and its usage sums the responses; the cost is unknown.
    """

    _USAGE_KEYS = (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    )

    def __init__(self) -> None:
        self.out: list[Emitted] = []
        self.turns = 0
        self.tokens = {"input_tokens": 0, "output_tokens": 0}
        self._turn: _Turn | None = None
        self._parser = ClaudeStreamParser()

    def add(self, entry: JsonDict) -> bool:
        """Convert one entry; True if it produced events."""
        stamp: JsonDict = {"imported": True, "uuid": entry["uuid"]}
        if isinstance(entry.get("timestamp"), str):
            stamp["timestamp"] = entry["timestamp"]
        role, emitted = self._convert(entry)
        if role in ("prompt", "boundary"):
            self.close()
        if role in ("prompt", "agent") and emitted and self._turn is None:
            self._turn = _Turn(started=_str(entry.get("timestamp")))
        if self._turn is not None and role in ("prompt", "agent", "interrupt"):
            self._track(self._turn, entry, role)
        self.out.extend((kind, {**payload, **stamp}) for kind, payload in emitted)
        return bool(emitted)

    def add_raw(self, line: RawLine) -> None:
        """A line the app cannot read as a message: shown as it is, folded."""
        text = line.text if len(line.text) <= RAW_LIMIT else line.text[:RAW_LIMIT] + " …"
        note = {"text": text, "note": "unknown_line", "line_type": line.type}
        self.out.append(("note", {**note, "imported": True, "uuid": line.key}))

    @property
    def turn_finished(self) -> bool:
        """Whether the open turn has ended in the file (its last answer asked for no tool)."""
        return self._turn is not None and not self._turn.waiting

    def drain(self) -> tuple[list[Emitted], int, dict[str, int]]:
        """The events, turns and tokens built since the last drain."""
        out, turns, tokens = self.out, self.turns, self.tokens
        self.out, self.turns = [], 0
        self.tokens = dict.fromkeys(tokens, 0)
        return out, turns, tokens

    def close(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        usage = {k: sum(u.get(k, 0) for u in turn.usage.values()) for k in self._USAGE_KEYS}
        for key in self.tokens:
            self.tokens[key] += usage[key]
        end = TurnEnded(
            stop_reason=turn.stop_reason,
            is_error=turn.is_error,
            duration_ms=_duration_ms(turn.started, turn.ended),
            usage=usage,
        ).payload()
        end["errors"] = list(end["errors"])
        # When and on which model the turn ran, for the usage page (not the import's time).
        end.update(imported=True, uuid=turn.last_uuid, timestamp=turn.ended, model=turn.model)
        self.out.append(("turn_end", end))
        self.turns += 1

    def _track(self, turn: _Turn, entry: JsonDict, role: str) -> None:
        turn.ended = _str(entry.get("timestamp")) or turn.ended
        turn.last_uuid = entry["uuid"]
        turn.waiting = role != "interrupt"
        if role == "interrupt":
            turn.stop_reason = "interrupted"
        message = _message(entry)
        if entry.get("isApiErrorMessage"):
            turn.is_error, turn.waiting = True, False
        elif entry.get("type") == "assistant":
            stop = message.get("stop_reason")
            turn.waiting = stop in (None, "tool_use", "pause_turn")
            if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
                turn.model = message["model"]
            if isinstance(message.get("stop_reason"), str):
                turn.stop_reason = message["stop_reason"]
            usage = message.get("usage")
            if isinstance(usage, dict):
                # One entry per content block, each repeating the response's usage.
                turn.usage[_str(message.get("id")) or entry["uuid"]] = {
                    k: v for k in self._USAGE_KEYS if isinstance(v := usage.get(k), int)
                }

    def _parsed(self, entry: JsonDict) -> list[Emitted]:
        # Transcript entries carry their message in the same shape as stdout lines.
        items = self._parser.parse(entry)
        return [(e.kind, e.payload()) for e in items if isinstance(e, BrainEvent)]

    def _convert(self, entry: JsonDict) -> tuple[str, list[Emitted]]:
        if entry.get("type") == "assistant":
            if entry.get("isApiErrorMessage"):
                text = "\n".join(_str(b.get("text")) for b in _blocks(entry)) or "API error"
                return "agent", [("error", {"message": text, "detail": ""})]
            emitted = [e for e in self._parsed(entry) if not _noise(*e)]
            return "agent", emitted
        if entry.get("isCompactSummary"):
            text = _user_text(entry)
            return "boundary", [("note", {"text": text, "note": "compact_summary"})]
        if results := self._parsed(entry):
            return "agent", results
        text = _user_text(entry)
        if not text.strip():
            return "none", []
        if _INTERRUPTED.match(text):
            return "interrupt", []
        if command := _COMMAND.search(text):
            args = _COMMAND_ARGS.search(text)
            line = " ".join(p for p in (command[1].strip(), args[1].strip() if args else "") if p)
            return "boundary", [("user_message", {"text": line})]
        if output := _COMMAND_OUTPUT.search(text):
            note = {"text": output[1].strip(), "note": "command_output"}
            return "boundary", [("note", note)] if note["text"] else []
        return "prompt", [("user_message", {"text": text})]


def conversation(transcript: Transcript) -> list[JsonDict]:
    """The entries of the main thread that are shown, root first."""
    return [e for e in main_thread(transcript.entries) if visible(e)]


def visible(entry: JsonDict) -> bool:
    return (
        entry.get("type") in ("user", "assistant")
        and not entry.get("isMeta")
        and not entry.get("isSidechain")
        and not entry.get("teamName")
    )


def title_for(transcript: Transcript, thread: list[JsonDict]) -> str:
    for title in (transcript.custom_title, transcript.ai_title, transcript.summary):
        if title:
            return title_from_message(title)
    for entry in thread:
        if entry.get("type") != "user" or entry.get("isCompactSummary") or not visible(entry):
            continue
        text = _user_text(entry).strip()
        if text and not _NOT_A_PROMPT.match(text) and not _COMMAND.search(text):
            return title_from_message(text)
    return ""


# -- small helpers -------------------------------------------------------------------
def _noise(kind: str, payload: JsonDict) -> bool:
    # The CLI stores an empty answer as this placeholder text.
    return kind == "assistant_message" and payload.get("text") == "(no content)"


def _message(entry: JsonDict) -> JsonDict:
    message = entry.get("message")
    return message if isinstance(message, dict) else {}


def _blocks(entry: JsonDict) -> list[JsonDict]:
    content = _message(entry).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _is_result(block: JsonDict) -> bool:
    return block.get("type") == "tool_result"


def _user_text(entry: JsonDict) -> str:
    content = _message(entry).get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in _blocks(entry):
        if block.get("type") == "text":
            parts.append(_str(block.get("text")))
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(p for p in parts if p)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_time(value: str) -> datetime | None:
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _duration_ms(start: str, end: str) -> int | None:
    first, last = parse_time(start), parse_time(end)
    if first is None or last is None or last < first:
        return None
    return int((last - first).total_seconds() * 1000)
