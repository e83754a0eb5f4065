"""A subagent's work, nested under the tool call that runs it.

Claude Code runs a subagent as an ``Agent`` tool call (``Task`` in older versions).
What the subagent says and does arrives as ordinary events that carry
``parent_tool_call_id`` (that call's id), and its progress as ``task`` events naming the
call by ``tool_call_id``. The page shows the subagent's work folded under the call, with
one status line from its task reports; the subagent's permission requests stay at the top
level, where the user sees them, and only learn which subagent asked.
"""

from __future__ import annotations

from typing import Any

from app.services.store.records import EventDict

SUBAGENT_TOOLS = ("Agent", "Task")
# What a subagent's group holds; anything else it causes stays where it is.
NESTED_KINDS = frozenset({"assistant_message", "thought", "tool_call", "tool_result"})
# The fields of a task report the status line shows; a report that leaves one empty
# keeps what an earlier one said.
TASK_FIELDS = ("status", "description", "subagent_type", "summary", "last_tool")
# A subagent whose reports still say running once its call has ended went this way.
_ENDED = {"done": "completed", "failed": "failed", "stopped": "stopped"}


def subagent_from_input(call: EventDict) -> dict[str, Any]:
    """What the call's own input says about its subagent (its description and type)."""
    tool_input = call.get("input")
    given = tool_input if isinstance(tool_input, dict) else {}
    keys = ("description", "subagent_type")
    return {key: given[key] for key in keys if isinstance(given.get(key), str)}


def _with_report(info: dict[str, Any], task: EventDict) -> dict[str, Any]:
    merged = dict(info)
    for key in TASK_FIELDS:
        value = task.get(key)
        # A progress report's description is what the subagent does now, not its name:
        # the call's own description (or the first report's) names it.
        if isinstance(value, str) and value and not (key == "description" and info.get(key)):
            merged[key] = value
    return merged


def nest_subagents(items: list[EventDict]) -> list[EventDict]:
    """``items`` with each subagent's work moved under the call that runs it.

    A call that runs a subagent (an ``Agent`` call, or any call something names as its
    parent) gets ``subagent`` ({description, subagent_type, status, summary, last_tool},
    from its input and the newest task reports) and ``children`` (the subagent's items, in
    order). Its ``task`` events are folded into it; a permission request the subagent
    made gets the same ``subagent`` and stays at the top level. Items whose call is not
    in ``items`` (an earlier page) stay where they are. Input dicts are never modified.
    """
    calls: dict[str, EventDict] = {}
    out: list[EventDict] = []
    for item in items:
        kind = item.get("kind")
        if kind == "tool_call":
            item = dict(item)
            calls[str(item.get("tool_call_id") or "")] = item
            if item.get("tool") in SUBAGENT_TOOLS:
                item["subagent"] = subagent_from_input(item)
        elif kind == "task":
            host = calls.get(str(item.get("tool_call_id") or ""))
            if host is not None:
                host["subagent"] = _with_report(_subagent(host), item)
                continue
        parent = str(item.get("parent_tool_call_id") or "")
        host = calls.get(parent) if parent else None
        if host is None:
            out.append(item)
        elif kind == "permission_request":
            out.append({**item, "subagent": _subagent(host)})
        elif kind in NESTED_KINDS:
            host.setdefault("children", []).append(item)
            _subagent(host)
        else:
            out.append(item)
    for call in calls.values():
        info = call.get("subagent")
        state = str(call.get("state") or "running")
        if isinstance(info, dict) and info.get("status", "running") == "running":
            info["status"] = _ENDED.get(state, "running")
    return out


def _subagent(call: EventDict) -> dict[str, Any]:
    """The call's subagent info, made from its input the first time it is needed."""
    info = call.get("subagent")
    if not isinstance(info, dict):
        info = call["subagent"] = subagent_from_input(call)
    return info
