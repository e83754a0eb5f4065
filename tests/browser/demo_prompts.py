"""Sessions with a question, a plan, a subagent and a model choice, for the screenshots.

Like demo.py, finished turns are written straight into the event table; the pending
question and plan come from the fake claude, as a user would see them.
"""

from __future__ import annotations

from typing import Any

QUESTION = {
    "questions": [
        {
            "question": "Where should the token lifetime come from?",
            "header": "Setting",
            "options": [
                {"label": "settings.py", "description": "one constant, read at start-up"},
                {"label": "Environment", "description": "TOKEN_MINUTES, default 30"},
            ],
            "multiSelect": False,
        },
        {
            "question": "Which tests should I add?",
            "header": "Tests",
            "options": [
                {"label": "Expiry", "description": "a token past its lifetime is refused"},
                {"label": "Refresh", "description": "a refreshed token gets a new lifetime"},
            ],
            "multiSelect": True,
        },
    ]
}
PLAN_TEXT = """\
## Read the token lifetime from settings

1. Add `TOKEN_MINUTES = 30` to `settings.py`.
2. Use it in `token_expiry()` instead of the literal `30`.
3. Add a test that freezes the clock and checks both ends of the lifetime.

Nothing else changes; `clock.now()` stays injected."""
AGENT_INPUT = {
    "description": "Find every use of the clock",
    "prompt": "List the places that read the wall clock.",
    "subagent_type": "Explore",
}


def subagent_conversation() -> list[tuple[float, str, dict[str, Any]]]:
    """A turn in which a subagent searched the code while the main agent waited."""
    inner = {"parent_tool_call_id": "a1"}
    grep = {"pattern": "datetime.now|time.time", "path": "src"}
    return [
        (0, "user_message", {"text": "Is the wall clock read anywhere else?"}),
        (
            1.2,
            "tool_call",
            {
                "tool_call_id": "a1",
                "tool": "Agent",
                "title": AGENT_INPUT["description"],
                "input": AGENT_INPUT,
                "tool_kind": "other",
            },
        ),
        (
            1.3,
            "task",
            {
                "task_id": "k1",
                "tool_call_id": "a1",
                "status": "running",
                "description": AGENT_INPUT["description"],
                "subagent_type": "Explore",
            },
        ),
        (
            2.0,
            "tool_call",
            {
                "tool_call_id": "g1",
                "tool": "Grep",
                "title": grep["pattern"],
                "input": grep,
                "tool_kind": "search",
                **inner,
            },
        ),
        (
            2.4,
            "tool_result",
            {"tool_call_id": "g1", "output": "src/auth.py:5\nsrc/jobs.py:41", **inner},
        ),
        (
            3.1,
            "tool_call",
            {
                "tool_call_id": "r1",
                "tool": "Read",
                "title": "src/jobs.py",
                "input": {"file_path": "src/jobs.py"},
                "tool_kind": "read",
                **inner,
            },
        ),
        (3.2, "tool_result", {"tool_call_id": "r1", "output": "…", **inner}),
        (
            3.3,
            "task",
            {"task_id": "k1", "tool_call_id": "a1", "status": "running", "last_tool": "Read"},
        ),
        (
            5.0,
            "assistant_message",
            {
                "text": "Two places: `src/auth.py:5` (fixed) and "
                "`src/jobs.py:41`, which schedules the nightly cleanup.",
                "message_id": "s1",
                **inner,
            },
        ),
        (
            5.2,
            "task",
            {
                "task_id": "k1",
                "tool_call_id": "a1",
                "status": "completed",
                "summary": "2 places read the wall clock",
            },
        ),
        (5.3, "tool_result", {"tool_call_id": "a1", "output": "Two places: …"}),
        (
            7.0,
            "assistant_message",
            {
                "text": "Only `src/jobs.py:41` is left; it should take the injected clock too.",
                "message_id": "m9",
            },
        ),
        (
            7.2,
            "turn_end",
            {
                "stop_reason": "end_turn",
                "cost_usd": 0.0188,
                "duration_ms": 7200,
                "usage": {"input_tokens": 8200, "output_tokens": 420},
            },
        ),
    ]


def finished_with_models() -> list[tuple[float, str, dict[str, Any]]]:
    """A short turn, and the models the CLI offered (with its descriptions)."""
    offered = [
        ("default", "Default (recommended)", "Opus for the hard parts, Sonnet for the rest"),
        ("sonnet", "Sonnet", "Sonnet 4.5 · Best for everyday tasks"),
        ("opus", "Opus", "Opus 4.1 · Most capable, uses your limits faster"),
        ("haiku", "Haiku", "Haiku 4.5 · Fastest for quick answers"),
    ]
    models = [{"id": i, "label": label, "description": d} for i, label, d in offered]
    return [
        (0, "user_message", {"text": "Proofread docs/user-guide.md."}),
        (0.5, "models", {"models": models, "current": ""}),
        (
            6.0,
            "assistant_message",
            {"text": "Fixed 4 typos; nothing else changed.", "message_id": "m1"},
        ),
        (
            6.2,
            "turn_end",
            {
                "stop_reason": "end_turn",
                "cost_usd": 0.0061,
                "duration_ms": 6200,
                "usage": {"input_tokens": 3100, "output_tokens": 150},
            },
        ),
    ]
