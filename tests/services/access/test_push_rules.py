"""What a push may say and who it says it is from: the VAPID subject rules (Apple refuses
a localhost, ``.local`` or ``.invalid`` one), the payload's size bound and its topic."""

from __future__ import annotations

import json
import re

import pytest

from app.services.access.push_send import PAYLOAD_MAX, Notice, shown_name, topic_for
from app.services.access.vapid import subject_for


@pytest.mark.parametrize(
    ("configured", "origin", "expected"),
    [
        ("mailto:me@example.com", "", "mailto:me@example.com"),
        ("https://box.tail1234.ts.net:8443/x", "", "https://box.tail1234.ts.net"),
        ("", "https://box.tail1234.ts.net:443", "https://box.tail1234.ts.net"),
        ("mailto:me@example.com", "https://box.tail1234.ts.net", "mailto:me@example.com"),
    ],
)
def test_a_usable_subject(configured: str, origin: str, expected: str) -> None:
    assert subject_for(configured, origin).value == expected


@pytest.mark.parametrize(
    ("configured", "origin", "named"),
    [
        ("mailto:x@localhost", "", "localhost"),
        ("mailto:me@laptop.local", "", "laptop.local"),
        ("mailto:me@nowhere.invalid", "", "nowhere.invalid"),
        ("mailto:nobody", "", "mailto:nobody"),
        ("https://localhost", "", "localhost"),
        ("http://example.com", "", "http://example.com"),
        ("", "http://box.tail1234.ts.net", "box.tail1234.ts.net"),
        ("", "https://127.0.0.1:8765", "127.0.0.1"),
        ("", "", "ANGELIA_PUSH_SUBJECT"),
    ],
)
def test_an_unusable_subject_is_refused_with_why(configured: str, origin: str, named: str) -> None:
    subject = subject_for(configured, origin)
    assert subject.value == "" and named in subject.refusal


def test_the_payload_stays_within_what_a_push_service_must_take() -> None:
    notice = Notice("approval", "s1", "Approval waiting", "é" * 5000, "/sessions/s1")
    text = notice.payload()
    assert len(text.encode()) <= PAYLOAD_MAX
    assert json.loads(text)["kind"] == "approval" and "urgency" not in json.loads(text)


def test_names_are_one_short_line() -> None:
    assert shown_name("Bash\n\u202erm -rf") == "Bash  rm -rf"
    assert len(shown_name("x" * 500)) == 80


def test_the_topic_is_short_base64url_and_per_session() -> None:
    first, second = topic_for("a" * 100), topic_for("b")
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", first) and first != second
