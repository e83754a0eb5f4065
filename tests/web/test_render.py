"""The event and page templates, rendered through the one Jinja environment."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.templating import Jinja2Templates

from app.resources import templates_dir
from app.web.render import make_templates
from app.web.transcript import (
    EVENT_KINDS,
    SSE_SWAP_EVENTS,
    error_advice,
    fold_events,
    render_event,
    with_thought_duration,
)

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def templates() -> Jinja2Templates:
    return make_templates(templates_dir())


def ev(seq: int, kind: str, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "session_id": "s1", "kind": kind, "at": "2026-12-02T14:00:00Z", **payload}


def sample_events(text: str = "hello") -> list[dict[str, Any]]:
    """One event of every kind, every string field set to ``text``."""
    return [
        ev(1, "user_message", text=text),
        ev(2, "text_delta", text=text, message_id=text),
        ev(3, "assistant_message", text=text, message_id=text),
        ev(4, "thought", text=text),
        ev(
            5,
            "tool_call",
            tool_call_id=text,
            tool=text,
            title=text,
            tool_kind=text,
            input={"command": text, text: text},
        ),
        ev(6, "tool_result", tool_call_id=text, output=text, is_error=True),
        ev(
            7,
            "permission_request",
            permission_id=text,
            tool=text,
            title=text,
            reason=text,
            blocked_path=text,
            status="pending",
            input={"file_path": text, "old_string": text, "new_string": text + "x"},
            options=[{"option_id": text, "label": text, "choice": "allow_once"}],
        ),
        ev(
            8,
            "permission_decision",
            permission_id=text,
            decision="deny",
            source="user",
            message=text,
            tool=text,
        ),
        ev(
            9,
            "turn_end",
            stop_reason=text,
            is_error=True,
            cost_usd=0.0123,
            duration_ms=2800,
            usage={"input_tokens": 1234, "output_tokens": 310},
            result=text,
            errors=[text],
        ),
        ev(10, "backend_session", backend_session_id=text),
        ev(
            11,
            "session_info",
            model=text,
            permission_mode=text,
            api_key_source=text,
            cli_version=text,
            tools=[text],
            slash_commands=[text],
        ),
        ev(12, "mode_changed", mode=text),
        ev(13, "error", message=text + " install", detail=text),
        ev(14, "status", status="failed"),
        ev(15, "status", status=text),
        ev(16, "something_new", text=text),
        ev(17, text, text=text),
    ]


def session_context(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "csrf_token": "tok",
        "sidebar_sessions": [
            {"id": "s1", "title": "Fix it", "status": "live", "label": "live", "day": "Today"}
        ],
        "pending_total": 1,
        "session": {
            "id": "s1",
            "title": "Fix it",
            "status": "live",
            "backend": "claude",
            "backend_session_id": None,
            "cost_usd": 0.42,
            "input_tokens": 1200,
            "output_tokens": 300,
            "created_at": datetime(2026, 12, 2, 14, 0),
        },
        "profile": {
            "id": "p1",
            "name": "Proj",
            "backend": "claude",
            "cwd": "/src/app",
            "model": None,
            "permission_mode": "default",
        },
        "items": items,
        "last_seq": items[-1]["seq"] if items else 0,
        "pending_count": 0,
        "install_hint": "npm i -g @anthropic-ai/claude-code",
        **extra,
    }


def assert_no_active_markup(html: str) -> None:
    assert "<script" not in html.replace('<script src="/static/', "")
    assert not re.search(r"<img\b", html)
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(True):
        for attr in tag.attrs:
            assert not attr.lower().startswith("on"), (tag.name, attr)
        assert "style" not in tag.attrs, tag.name
        href = str(tag.get("href", ""))
        assert not href.lower().startswith(("javascript:", "data:", "vbscript:")), href


# -- _event.html ------------------------------------------------------------------------


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: str(e["kind"]))
def test_every_kind_renders(templates: Jinja2Templates, event: dict[str, Any]) -> None:
    html = render_event(templates, event)
    soup = BeautifulSoup(html, "html.parser")
    root = soup.find(True)
    assert root is not None
    assert root.get("data-kind") == event["kind"]
    assert root.get("data-seq") == str(event["seq"])


@pytest.mark.parametrize("event", sample_events(HOSTILE), ids=lambda e: str(e["seq"]))
def test_agent_text_is_escaped(templates: Jinja2Templates, event: dict[str, Any]) -> None:
    html = render_event(templates, event, install_hint=HOSTILE)
    assert_no_active_markup(html)


def test_folded_items_render(templates: Jinja2Templates) -> None:
    items = fold_events(
        sample_events(HOSTILE) + [ev(18, "text_delta", text=HOSTILE, message_id="live1")]
    )
    for item in items:
        assert_no_active_markup(render_event(templates, item))
    stream = BeautifulSoup(render_event(templates, items[-1]), "html.parser").find(True)
    assert stream is not None and stream["id"] == "live-live1"


def test_text_delta_fragment(templates: Jinja2Templates) -> None:
    html = render_event(templates, ev(3, "text_delta", text="a < b", message_id="m1"))
    span = BeautifulSoup(html, "html.parser").select_one("span.delta")
    assert span is not None
    assert span["data-mid"] == "m1" and span.get_text() == "a < b"


def test_assistant_markdown_and_user_plain(templates: Jinja2Templates) -> None:
    user = render_event(templates, ev(1, "user_message", text="**not bold**"))
    assert "<strong>" not in user
    reply = render_event(templates, ev(2, "assistant_message", text="**bold**", message_id="m"))
    assert "<strong>bold</strong>" in reply


def test_tool_result_truncates_long_output(templates: Jinja2Templates) -> None:
    output = "\n".join(f"line {i}" for i in range(500))
    html = render_event(templates, ev(6, "tool_result", tool_call_id="t", output=output))
    soup = BeautifulSoup(html, "html.parser")
    first = soup.select_one("pre.output")
    assert first is not None and first.get_text().count("\n") == 199
    assert soup.select_one("details.show-all") is not None
    assert "line 499" in html


def test_error_card_shows_install_hint(templates: Jinja2Templates) -> None:
    event = ev(1, "error", message="claude not found: install it first", detail="stderr tail")
    html = render_event(templates, event, install_hint="npm i -g x")
    assert "<code>npm i -g x</code>" in html
    assert "stderr tail" in html
    plain = render_event(templates, ev(2, "error", message="rate limited", detail=""))
    assert "npm" not in plain


def perm_buttons(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    return [str(b["value"]) for b in soup.select("button[name=decision]")]


def test_permission_card_buttons_only_when_pending(templates: Jinja2Templates) -> None:
    request = ev(
        7,
        "permission_request",
        permission_id="p1",
        tool="Bash",
        title="rm -rf build",
        input={"command": "rm -rf build"},
        options=[],
        reason="",
        status="pending",
    )
    pending = render_event(templates, request)
    assert perm_buttons(pending) == ["allow_once", "allow_always", "deny", "deny_stop"]
    soup = BeautifulSoup(pending, "html.parser")
    form = soup.select_one("form")
    assert form is not None
    assert form["hx-post"] == "/permissions/p1/decision"
    assert form["hx-target"] == "closest .perm" and form["hx-swap"] == "outerHTML"
    assert soup.select_one("input[name=message]") is not None

    decision = ev(
        8,
        "permission_decision",
        permission_id="p1",
        decision="allow_once",
        source="user",
        message="",
    )
    folded = fold_events([request, decision])
    decided = render_event(templates, folded[0])
    assert perm_buttons(decided) == []
    assert "Allowed once by you" in decided
    assert "Allowed once by you" in render_event(templates, folded[1])


@pytest.mark.parametrize(
    ("status", "decision", "source", "buttons", "text"),
    [
        ("pending", None, None, 4, "Needs approval"),
        ("decided", "deny_stop", "user", 0, "Denied and stopped by you"),
        ("decided", "allow_always", "rule", 0, "Always allowed by a saved rule"),
        ("expired", "expired", "timeout", 0, "Expired after waiting too long"),
        ("cancelled", "cancelled", "cancel", 0, "Cancelled"),
    ],
)
def test_permission_card_partial(
    templates: Jinja2Templates,
    status: str,
    decision: str | None,
    source: str | None,
    buttons: int,
    text: str,
) -> None:
    perm = {
        "permission_id": "p9",
        "tool": "Edit",
        "input": {"file_path": "a.py"},
        "title": "Edit a.py",
        "reason": HOSTILE,
        "status": status,
        "decision": decision,
        "source": source,
    }
    html = templates.get_template("cards/_permission.html").render(perm=perm, notice=HOSTILE)
    assert len(perm_buttons(html)) == buttons
    assert text in html
    assert_no_active_markup(html)
    card = BeautifulSoup(html, "html.parser").select_one(".perm")
    assert card is not None and card["id"] == "perm-p9"


@pytest.mark.parametrize("kind", [None, "tool", "no_such_card", "../base"])
def test_permission_card_kind_without_its_own_card_is_a_tool_card(
    templates: Jinja2Templates, kind: str | None
) -> None:
    perm = {"permission_id": "p9", "tool": "Bash", "status": "pending", "kind": kind}
    card = templates.get_template("cards/_permission.html")
    assert card.render(perm=perm) == card.render(perm={**perm, "kind": "tool"})
    assert 'data-prompt="tool"' in card.render(perm=perm)


def test_every_event_template_is_named_by_the_dispatcher() -> None:
    # _event.html includes events/_<name>.html only for the names it lists.
    names = {p.stem.removeprefix("_") for p in (templates_dir() / "events").glob("_*.html")}
    source = (templates_dir() / "_event.html").read_text()
    assert names and {name for name in names if f'"{name}"' not in source} == set()


# -- pages -----------------------------------------------------------------------------


def test_session_page(templates: Jinja2Templates) -> None:
    items = fold_events(sample_events(HOSTILE))
    html = templates.get_template("session.html").render(session_context(items))
    assert_no_active_markup(html)
    soup = BeautifulSoup(html, "html.parser")
    log = soup.select_one("#transcript")
    assert log is not None
    assert log["role"] == "log" and log["aria-live"] == "polite"
    assert log["hx-ext"] == "sse"
    assert log["sse-connect"] == "/sessions/s1/live?after=17"
    assert log["sse-swap"] == SSE_SWAP_EVENTS
    assert set(SSE_SWAP_EVENTS.split(",")) == {*EVENT_KINDS, "agent_error"}
    assert log["hx-swap"] == "beforeend"
    composer = soup.select_one("form#composer")
    assert composer is not None and composer["hx-post"] == "/sessions/s1/messages"
    assert composer.select_one("textarea[name=text]") is not None
    stop = composer.select_one("button[hx-post='/sessions/s1/interrupt']")
    assert stop is not None
    assert soup.select_one('meta[name="csrf-token"]')["content"] == "tok"  # type: ignore[index]
    assert soup.body is not None and soup.body["hx-headers"] == '{"X-CSRF-Token": "tok"}'
    scripts = [s["src"] for s in soup.find_all("script")]
    assert scripts == [
        "/static/vendor/htmx.min.js",
        "/static/vendor/sse.js",
        "/static/js/core.js",
        "/static/js/link.js",
        "/static/js/push.js",
        "/static/js/page.js",
        "/static/js/sidebar.js",
        "/static/js/cards.js",
        "/static/js/keys.js",
        "/static/js/menu.js",
        "/static/js/composer.js",
        "/static/js/mentions.js",
        "/static/js/model.js",
        "/static/js/items.js",
        "/static/js/queue.js",
        "/static/js/steer.js",
        "/static/js/subagents.js",
        "/static/js/transcript.js",
        "/static/js/attach.js",
        "/static/js/rewind.js",
        "/static/js/limits.js",
        "/static/js/main.js",
        "/static/history.js",
        "/static/js/gauge.js",
    ]
    assert all(not s.string for s in soup.find_all("script"))


def test_session_page_empty_and_csrf_escaped(templates: Jinja2Templates) -> None:
    context = session_context([], csrf_token="a'b\"<c>")
    html = templates.get_template("session.html").render(context)
    soup = BeautifulSoup(html, "html.parser")
    expected = '{"X-CSRF-Token": "a\\u0027b\\"\\u003cc\\u003e"}'
    assert soup.body is not None and soup.body["hx-headers"] == expected


def test_index_page(templates: Jinja2Templates) -> None:
    context = {
        "csrf_token": "tok",
        "sessions": [
            {
                "id": "s1",
                "title": HOSTILE,
                "status": "idle",
                "backend": "claude",
                "profile_name": "Proj",
                "created_at": datetime(2026, 12, 1),
                "updated_at": datetime(2026, 12, 2),
                "cost_usd": 0.5,
            }
        ],
        "profiles": [
            {
                "id": "p1",
                "name": HOSTILE,
                "backend": "claude",
                "cwd": "/x",
                "model": None,
                "permission_mode": "default",
            }
        ],
        "backends": ["claude"],
        "permission_modes": ["default", "plan"],
        "error": HOSTILE,
        "form": {
            "name": "n",
            "backend": "claude",
            "cwd": "/y",
            "model": "",
            "permission_mode": "plan",
        },
    }
    html = templates.get_template("index.html").render(context)
    assert_no_active_markup(html)
    soup = BeautifulSoup(html, "html.parser")
    assert soup.select_one("form[action='/sessions'] select[name=profile_id]") is not None
    profile_form = soup.select_one("form[action='/profiles']")
    assert profile_form is not None
    assert profile_form.select_one("input[name=cwd]")["value"] == "/y"  # type: ignore[index]
    assert profile_form.select_one("option[selected]")["value"] == "claude"  # type: ignore[index]
    assert soup.select_one("a[href='/sessions/s1']") is not None


def test_index_page_without_profiles(templates: Jinja2Templates) -> None:
    context: dict[str, Any] = {
        "sessions": [],
        "profiles": [],
        "backends": ["claude"],
        "permission_modes": ["default"],
        "error": None,
        "form": {},
    }
    html = templates.get_template("index.html").render(context)
    soup = BeautifulSoup(html, "html.parser")
    assert soup.select_one("form[action='/sessions']") is None
    assert soup.select_one("form[action='/profiles']") is not None
    assert "Create one to start" in html


def test_error_page(templates: Jinja2Templates) -> None:
    html = templates.get_template("error.html").render(status=404, message=HOSTILE, detail=HOSTILE)
    assert_no_active_markup(html)
    assert "404" in html


# -- chat page additions ---------------------------------------------------------------


def test_live_long_output_fragment_shows_the_head_only(templates: Jinja2Templates) -> None:
    output = "\n".join(f"line {i}" for i in range(2000))
    soup = BeautifulSoup(
        render_event(templates, ev(6, "tool_result", tool_call_id="t", output=output)),
        "html.parser",
    )
    head = soup.select_one(".tool-result > pre.output")
    assert head is not None and head.get_text().count("\n") == 199
    rest = soup.select_one("details.show-all pre.output-rest")
    assert rest is not None and rest.get_text().startswith("line 200\n")
    # The rest is not the whole output again.
    assert "line 0\n" not in rest.get_text()


def test_thought_is_timed_from_the_event_before_it(templates: Jinja2Templates) -> None:
    events = [
        ev(1, "user_message", text="hi", at="2026-12-02T14:00:00.000Z"),
        ev(2, "thought", text="hmm", at="2026-12-02T14:00:04.100Z"),
        ev(3, "thought", text="known", at="2026-12-02T15:00:00.000Z", duration_ms=2500),
        ev(4, "thought", text="idle gap", at="2026-12-02T16:00:00.000Z"),
    ]
    folded = fold_events(events)
    assert [e.get("duration_ms") for e in folded[1:]] == [4100, 2500, None]
    summaries = [
        BeautifulSoup(render_event(templates, e), "html.parser").summary.get_text()  # type: ignore[union-attr]
        for e in folded[1:]
    ]
    assert summaries == ["Thought for 4.1 s", "Thought for 2.5 s", "Thought"]
    assert with_thought_duration(events[1], None) is events[1]
    fast = with_thought_duration(ev(2, "thought", at="2026-12-02T14:00:00.300Z"), events[0]["at"])
    soup = BeautifulSoup(render_event(templates, fast), "html.parser")
    assert soup.summary is not None and soup.summary.get_text() == "Thought for <1 s"


def test_only_the_newest_plan_stays_open(templates: Jinja2Templates) -> None:
    entries = [
        {"content": HOSTILE, "status": "completed", "priority": "high"},
        {"content": "b", "status": "in_progress"},
        {"content": "c", "status": "bogus"},
    ]
    folded = fold_events([ev(1, "plan", entries=entries), ev(2, "plan", entries=entries)])
    assert folded[0]["superseded"] is True and "superseded" not in folded[1]
    old, new = (BeautifulSoup(render_event(templates, e), "html.parser") for e in folded)
    old_plan, new_plan = old.select_one("details.plan"), new.select_one("details.plan")
    assert old_plan is not None and new_plan is not None
    assert "is-old" in old_plan["class"] and not old_plan.has_attr("open")
    assert new_plan.has_attr("open") and "is-old" not in new_plan["class"]
    assert new_plan.summary is not None and new_plan.summary.get_text() == "Plan · 1 of 3 done"
    assert [li["class"] for li in new_plan.select("li")] == [
        ["plan-completed"],
        ["plan-in_progress"],
        ["plan-pending"],
    ]
    assert_no_active_markup(str(new))


def test_error_card_says_what_to_do(templates: Jinja2Templates) -> None:
    def todo(**payload: Any) -> str:
        soup = BeautifulSoup(render_event(templates, ev(1, "error", **payload)), "html.parser")
        found = soup.select_one(".error-todo")
        return found.get_text() if found else ""

    assert "Send a message to start the agent again" in todo(message="Claude Code exited.")
    assert "sign in" in todo(message="Invalid API key · Please run /login")
    assert "wait a minute" in todo(message="API Error: 429 rate_limit_error")
    # Messages that already say what to do are left to say it.
    assert todo(message="The server stopped. Send a message to continue.") == ""
    assert todo(message="x", resume_failed=True, continue_url="/sessions/s/continue") == ""
    assert error_advice({"message": "boom"}).startswith("Send a message")


def test_session_page_header_composer_and_commands(templates: Jinja2Templates) -> None:
    info = {"model": "opus", "api_key_source": "ANTHROPIC_API_KEY"}
    html = templates.get_template("session.html").render(
        session_context(
            [ev(1, "user_message", text="hi")],
            session_info=info,
            slash_commands=["compact", HOSTILE],
        )
    )
    assert_no_active_markup(html)
    soup = BeautifulSoup(html, "html.parser")
    auth = soup.select_one("#session-auth")
    assert auth is not None and not auth.has_attr("hidden")
    assert auth.get_text(" ", strip=True).endswith("API key from ANTHROPIC_API_KEY")
    model = soup.select_one("#session-model")
    assert model is not None and model.get_text() == "opus"
    options = soup.select("#slash-list [role=option]")
    assert [o["data-cmd"] for o in options] == ["compact", HOSTILE]
    box = soup.select_one("textarea#composer-text")
    assert box is not None and box["aria-controls"] == "slash-list"
    stop = soup.select_one("#stop-btn")
    assert stop is not None and stop["aria-keyshortcuts"] == "Control+Period"
    log = soup.select_one("#transcript")
    assert log is not None and log["role"] == "log" and log["aria-live"] == "polite"
    toggle = soup.select_one("#nav-toggle")
    assert toggle is not None and toggle.name == "button" and toggle["aria-controls"] == "nav-menu"


def test_commands_and_session_info_fragments_carry_the_list(
    templates: Jinja2Templates,
) -> None:
    listed = render_event(templates, ev(5, "commands", commands=["review", HOSTILE]))
    assert_no_active_markup(listed)
    soup = BeautifulSoup(listed, "html.parser")
    assert [s["data-cmd"] for s in soup.select("[data-cmd]")] == ["review", HOSTILE]
    info = render_event(
        templates, ev(6, "session_info", api_key_source="none", slash_commands=["/compact"])
    )
    root = BeautifulSoup(info, "html.parser").find(True)
    assert root is not None and root["data-api-key-label"] == "login (no API key)"
    assert [s["data-cmd"] for s in root.select("[data-cmd]")] == ["compact"]


def test_decision_line_hides_when_its_card_is_on_the_page(templates: Jinja2Templates) -> None:
    items = fold_events(
        [
            ev(1, "permission_request", permission_id="p1", tool="Bash", status="pending"),
            ev(2, "permission_decision", permission_id="p1", decision="deny", source="user"),
            ev(3, "permission_decision", permission_id="p0", decision="deny", source="rule"),
        ]
    )
    html = templates.get_template("_earlier.html").render(items=items, session_id="s1")
    soup = BeautifulSoup(html, "html.parser")
    lines = {str(d["data-pid"]): d.has_attr("hidden") for d in soup.select(".event.decision")}
    assert lines == {"p1": True, "p0": False}
    assert soup.select_one(".perm.decided") is not None
