"""The model list in Claude Code's ``initialize`` reply."""

from __future__ import annotations

from app.brains.claude.protocol import offered_models
from app.brains.claude.wire import set_model_request


def test_models_from_the_initialize_reply_skip_entries_without_a_value() -> None:
    offered = offered_models(
        {
            "commands": [],
            "models": [
                {"value": "default", "displayName": "Default", "description": "Opus 5.5"},
                {"value": "haiku", "description": 3},
                {"displayName": "no value"},
                "junk",
            ],
        }
    )
    assert offered is not None
    assert offered.models == (
        {"id": "default", "label": "Default", "description": "Opus 5.5"},
        {"id": "haiku", "label": "haiku", "description": ""},
    )


def test_no_models_listed_gives_nothing_to_offer() -> None:
    assert offered_models({}) is None
    assert offered_models({"models": "opus"}) is None


def test_set_model_frame() -> None:
    assert set_model_request("r9", "opus") == {
        "type": "control_request",
        "request_id": "r9",
        "request": {"subtype": "set_model", "model": "opus"},
    }
