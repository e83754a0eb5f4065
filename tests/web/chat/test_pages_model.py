"""The model picker in the chat header, its form route and the model_changed line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from bs4 import BeautifulSoup

from app.resources import templates_dir
from app.web.render import make_templates
from app.web.transcript import EVENT_KINDS, render_event
from tests.api.test_chat import make_session
from tests.helpers import of_kind
from tests.web.chat.test_pages_prompts import words
from tests.web.test_render import HOSTILE, assert_no_active_markup, ev, session_context

OFFERED = {
    "current": "haiku",
    "models": [
        {"id": "default", "label": "Default (recommended)", "description": "Opus for planning"},
        {"id": "haiku", "label": "Haiku", "description": "Fastest"},
        {"id": HOSTILE, "label": HOSTILE, "description": HOSTILE},
    ],
}


def picker(**extra: Any) -> BeautifulSoup:
    templates = make_templates(templates_dir())
    html = templates.get_template("session.html").render(session_context([], **extra))
    assert_no_active_markup(html)
    return BeautifulSoup(html, "html.parser")


def test_picker_offers_the_sessions_models_with_their_descriptions() -> None:
    page = picker(models=OFFERED)
    form = page.select_one("form#model-form")
    assert form is not None
    assert form["action"] == "/sessions/s1/model" and form["method"] == "post"
    assert form["data-api"] == "/api/sessions/s1/model"
    assert page.select_one("label[for=model-select]") is not None
    options = form.select("select#model-select option")
    assert [o["value"] for o in options] == ["default", "haiku", HOSTILE]
    assert [words(o) for o in options] == ["Default (recommended)", "Haiku", HOSTILE]
    assert [o.get("title") for o in options] == ["Opus for planning", "Fastest", HOSTILE]
    assert [o["value"] for o in options if o.has_attr("selected")] == ["haiku"]
    assert words(form.select_one("#model-hint")) == "Fastest"
    assert form.select_one("#model-error[hidden][role=alert]") is not None


def test_picker_without_a_current_model_selects_the_default_or_says_so() -> None:
    page = picker(models={**OFFERED, "current": ""})
    chosen = page.select("#model-select option[selected]")
    assert [o["value"] for o in chosen] == ["default"]
    only = {"current": "", "models": [{"id": "x-1", "label": "X", "description": ""}]}
    first = picker(models=only).select_one("#model-select option")
    assert first is not None and first.has_attr("disabled") and first.has_attr("selected")
    assert words(first) == "the backend's default"
    assert picker(models={"current": "", "models": []}).select_one("#model-form") is None
    assert picker().select_one("#model-form") is None


def test_model_changed_is_a_line_and_models_are_data() -> None:
    assert {"model_changed", "models"} <= set(EVENT_KINDS)
    templates = make_templates(templates_dir())
    line = BeautifulSoup(
        render_event(templates, ev(3, "model_changed", model="haiku", source="user")),
        "html.parser",
    ).select_one("[data-kind=model_changed]")
    assert line is not None and words(line) == "Model switched to haiku"
    assert line["data-model"] == "haiku" and not line.has_attr("hidden")
    offered = BeautifulSoup(
        render_event(templates, ev(4, "models", models=OFFERED["models"], current="")),
        "html.parser",
    ).select_one("[data-models]")
    assert offered is not None and offered.has_attr("hidden")
    assert [s["data-id"] for s in offered.select("span")] == ["default", "haiku", HOSTILE]


async def test_model_form_switches_or_says_why_not(
    client: httpx.AsyncClient, project_dir: Path, fake_claude: dict[str, Any]
) -> None:
    sid = await make_session(client, project_dir, fake_claude)
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    ids = [o["value"] for o in page.select("#model-select option")]
    assert {"default", "sonnet", "opus", "haiku"} <= set(ids)
    assert page.select_one("#model-select option[selected]")["value"] == "default"  # type: ignore[index]

    r = await client.post(f"/sessions/{sid}/model", data={"model": "a b"})
    assert r.status_code == 303 and r.headers["location"].endswith("#model-form")
    page = BeautifulSoup((await client.get(r.headers["location"])).text, "html.parser")
    error = page.select_one("#model-error")
    assert error is not None and not error.has_attr("hidden") and "model" in words(error)
    assert (await client.get(f"/api/sessions/{sid}")).json()["model"] is None

    r = await client.post(f"/sessions/{sid}/model", data={"model": "haiku"})
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/{sid}"
    page = BeautifulSoup((await client.get(f"/sessions/{sid}")).text, "html.parser")
    assert page.select_one("#model-select option[selected]")["value"] == "haiku"  # type: ignore[index]
    assert words(page.select_one("[data-kind=model_changed]")) == "Model switched to haiku"
    events = (await client.get(f"/api/sessions/{sid}/events")).json()["events"]
    assert [e["model"] for e in of_kind(events, "model_changed")] == ["haiku"]
    assert (await client.post("/sessions/nope/model", data={"model": "x"})).status_code == 404
