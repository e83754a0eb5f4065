"""Web Push end to end on loopback: the app posts to a fake push service that checks the
VAPID JWT and decrypts the body with the keys the test made as the "browser".

An approval or question that starts waiting pushes once per session (never the command),
a finished turn pushes when no page of the session is open, a scheduled continue that
fails pushes; a gone subscription (410) is deleted, a 429 is retried once, a 403 names
the subject in the log, a restart pushes nothing old, and bad subscriptions are refused.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from app.settings import Settings
from app.web.security import csrf_token_for
from tests.api.test_chat import make_session
from tests.api.test_scheduled_continue import limited_session
from tests.conftest import TOKEN, LiveServer, write_scenario
from tests.fakes.push_service import FakePushService, Push
from tests.helpers import count, read_sse, send, wait_for_events
from tests.real.test_real_claude_questions import QUESTIONS
from tests.security.test_access_matrix import signed_in

SUBJECT = "mailto:owner@example.com"
# Where the data dir keeps the VAPID private key.
KEY_FILE = "vapid-private.pem"
SECRET = "/home/someone/secret-plans.txt"
TOPIC = re.compile(r"[A-Za-z0-9_-]{1,32}")


@dataclass
class Rig:
    """The app, a client of it, the push service and a fake Claude to run sessions with."""

    service: FakePushService
    project_dir: Path
    fake: dict[str, Any]
    server: LiveServer | None = None
    client: httpx.AsyncClient | None = None

    @property
    def api(self) -> httpx.AsyncClient:
        assert self.client is not None, "the app is not running"
        return self.client

    def subscriptions(self) -> list[str]:
        assert self.server is not None
        return [s.endpoint for s in self.server.app.state.push.subscriptions.all()]

    async def subscribe(self, name: str = "phone") -> dict[str, Any]:
        endpoint, browser = self.service.endpoint(name)
        r = await self.api.post("/api/push/subscriptions", json=browser.subscription(endpoint))
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        return body

    async def session(self, steps: list[dict[str, Any]] | None = None) -> str:
        """A session that was sent one message (its turn plays ``steps``)."""
        if steps is not None:
            write_scenario(self.fake["scenario"], [steps])
        sid = await make_session(self.api, self.project_dir, self.fake)
        await send(self.api, sid, "go")
        return sid

    async def asking(self, command: str = "ls") -> str:
        """A session whose agent asks to run ``command`` with Bash."""
        tool = {"tool": "Bash", "input": {"command": command}, "permission": True}
        return await self.session([tool, {"text": "done"}])

    async def answer_all(self, decision: str = "allow_once") -> None:
        pending = (await self.api.get("/api/permissions", params={"status": "pending"})).json()
        for request in pending:
            r = await self.api.post(
                f"/api/permissions/{request['id']}/decision", json={"decision": decision}
            )
            assert r.status_code == 200, r.text

    async def arrived(self, n: int) -> list[Push]:
        return await asyncio.to_thread(self.service.wait_for, n)

    @asynccontextmanager
    async def running(self, settings: Settings) -> AsyncIterator[Rig]:
        """The app made now (so it reads the environment as the test set it)."""
        self.server = LiveServer(create_app(settings))
        await self.server.start()
        try:
            async with self.server.client() as self.client:
                yield self
        finally:
            await self.server.stop()


@pytest.fixture
def push_service() -> Iterator[FakePushService]:
    yield from FakePushService.serving()


@pytest.fixture
def rig(
    monkeypatch: pytest.MonkeyPatch,
    push_service: FakePushService,
    project_dir: Path,
    fake_claude: dict[str, Any],
) -> Rig:
    monkeypatch.setenv("ANGELIA_PUSH_SUBJECT", SUBJECT)
    monkeypatch.setenv("ANGELIA_PUSH_ENDPOINTS", push_service.origin)
    return Rig(push_service, project_dir, fake_claude)


@pytest.fixture
async def on(rig: Rig, settings: Settings) -> AsyncIterator[Rig]:
    """The rig with its app running."""
    async with rig.running(settings):
        yield rig


def asks(tool: str, command: str) -> dict[str, Any]:
    """A permission request the fake writes without waiting for its answer."""
    request = {
        "subtype": "can_use_tool",
        "tool_name": tool,
        "input": {"command": command},
        "tool_use_id": "toolu_early",
    }
    return {"emit": {"type": "control_request", "request_id": "early", "request": request}}


def kinds_of(pushes: list[Push]) -> list[str]:
    return [p.message["kind"] if p.message else "?" for p in pushes]


async def test_the_key_is_served_uncached_and_kept_private(on: Rig, settings: Settings) -> None:
    r = await on.api.get("/api/push/key")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    key = r.json()["public_key"]
    point = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    assert len(point) == 65 and point[0] == 4 and "=" not in key
    mode = stat.S_IMODE((settings.data_dir / KEY_FILE).stat().st_mode)
    assert mode == 0o600


async def test_an_approval_pushes_once_verified_and_without_the_command(on: Rig) -> None:
    await on.subscribe()
    sid = await on.asking(f"cat {SECRET}")
    events = await wait_for_events(on.api, sid, count("permission_request"))
    asked = next(e for e in events if e["kind"] == "permission_request")

    (push,) = await on.arrived(1)
    assert push.problems == []
    waited = push.at - datetime.fromisoformat(asked["at"]).timestamp()
    assert waited < 3.0, f"the push came {waited:.2f} s after the request"
    assert push.message == {
        "kind": "approval",
        "session_id": sid,
        "title": "Approval waiting",
        "body": "fake: Bash",
        "url": f"/sessions/{sid}",
    }
    assert "secret" not in str(push.message) and "cat " not in str(push.message)
    assert push.plaintext_size <= 3993
    assert push.headers["urgency"] == "high" and push.ttl > 0
    assert TOPIC.fullmatch(push.headers["topic"])
    assert push.claims["sub"] == SUBJECT and push.claims["aud"] == on.service.origin
    assert push.server_key == (await on.api.get("/api/push/key")).json()["public_key"]


async def test_requests_waiting_together_push_once_then_the_turn_end_pushes(on: Rig) -> None:
    await on.subscribe()
    second = {"tool": "Write", "input": {"file_path": SECRET}, "permission": True}
    sid = await on.session([asks("Bash", "ls"), second, {"text": "ok"}])
    await wait_for_events(on.api, sid, count("permission_request", 2))
    await on.answer_all()
    await wait_for_events(on.api, sid, count("turn_end"))
    # No page of the session is open: its finished turn is the next push.
    pushes = await on.arrived(2)
    assert kinds_of(pushes) == ["approval", "turn"]
    assert pushes[1].message and pushes[1].message["title"] == "Turn finished"
    assert pushes[1].headers["urgency"] == "normal"
    assert pushes[0].headers["topic"] == pushes[1].headers["topic"]
    assert all(p.problems == [] for p in pushes)


async def test_a_turn_that_ends_with_its_page_open_pushes_nothing(on: Rig, tmp_path: Path) -> None:
    assert on.server is not None
    await on.subscribe()
    flag = tmp_path / "end-the-turn"
    watched = await on.session([{"until_file": str(flag)}, {"text": "done"}])
    stream = asyncio.create_task(
        read_sse(on.api, f"/api/sessions/{watched}/stream", until=count("turn_end"))
    )
    events = on.server.app.state.angelia.events
    for _ in range(400):
        if events.subscriber_count(watched):
            break
        await asyncio.sleep(0.05)
    flag.touch()  # the turn ends while the stream is open
    await stream
    unwatched = await on.session([{"text": "hi"}])
    (push,) = await on.arrived(1)
    assert push.message and push.message["session_id"] == unwatched


async def test_a_gone_subscription_is_deleted(on: Rig) -> None:
    await on.subscribe()
    on.service.answers.append((410, {}))
    await on.session()
    await on.arrived(1)
    for _ in range(200):
        if not on.subscriptions():
            break
        await asyncio.sleep(0.05)
    assert on.subscriptions() == []


async def test_too_many_requests_is_retried_once(on: Rig) -> None:
    await on.subscribe()
    on.service.answers += [(429, {"Retry-After": "0"}), (429, {"Retry-After": "0"})]
    await on.asking()
    await on.arrived(2)
    await on.answer_all("deny")
    # The next push is the finished turn's: the refused one was tried twice, not more.
    pushes = await on.arrived(3)
    assert kinds_of(pushes) == ["approval", "approval", "turn"]
    assert len(on.subscriptions()) == 1


async def test_a_refused_subject_is_named_in_the_log(
    on: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    await on.subscribe()
    on.service.answers.append((403, {}))
    await on.session()
    await on.arrived(1)
    for _ in range(200):
        if any("403" in r.getMessage() and SUBJECT in r.getMessage() for r in caplog.records):
            return
        await asyncio.sleep(0.05)
    raise AssertionError([r.getMessage() for r in caplog.records])


async def test_a_restart_pushes_nothing_for_what_was_waiting(rig: Rig, settings: Settings) -> None:
    async with rig.running(settings):
        await rig.subscribe()
        old = await rig.asking()
        await rig.arrived(1)
    # Stopped with the request waiting; the next start must not push it again.
    async with rig.running(settings):
        new = await rig.asking()
        pushes = await rig.arrived(2)
    assert [p.message and p.message["session_id"] for p in pushes] == [old, new]
    # The same key after the restart: the subscription made before still verifies.
    assert pushes[0].server_key == pushes[1].server_key and pushes[1].problems == []


async def test_a_failed_scheduled_continue_pushes(on: Rig) -> None:
    assert on.server is not None
    reset = int(datetime.now(UTC).timestamp()) + 3600
    sid = await limited_session(on.api, on.project_dir, on.fake, reset)
    await on.server.app.state.angelia.manager.stop_brain(sid)
    write_scenario(on.fake["scenario"], [], unknown_resume=True)
    await on.subscribe()
    # Still ahead when the request arrives, however busy the machine.
    at = (datetime.now(UTC) + timedelta(seconds=4)).isoformat()
    r = await on.api.post(f"/api/sessions/{sid}/resume-at", json={"at": at})
    assert r.status_code == 201, r.text
    (push,) = await on.arrived(1)
    assert push.message is not None
    assert push.message["kind"] == "continue_failed" and push.message["session_id"] == sid
    assert push.message["title"] == "Scheduled continue failed"


async def test_switched_off_kinds_push_nothing(
    rig: Rig, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANGELIA_PUSH_APPROVALS", "false")
    async with rig.running(settings):
        await rig.subscribe()
        sid = await rig.asking()
        await wait_for_events(rig.api, sid, count("permission_request"))
        await rig.answer_all()
        (push,) = await rig.arrived(1)
    assert push.message and push.message["kind"] == "turn"


async def test_no_subject_sends_nothing_and_says_why(
    rig: Rig, settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("ANGELIA_PUSH_SUBJECT", "mailto:me@laptop.local")
    async with rig.running(settings):
        await rig.subscribe()
        sid = await rig.session()
        await wait_for_events(rig.api, sid, count("turn_end"))
        for _ in range(200):
            if any("Push not sent" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.05)
    said = [r.getMessage() for r in caplog.records if "Push not sent" in r.getMessage()]
    assert said and "laptop.local" in said[0]
    assert rig.service.pushes == []


BAD = [
    ("http://127.0.0.2:9/push/x", None, None, "endpoint", "not https"),
    ("https://push.example.net/x", None, None, "endpoint", "not a known push service"),
    ("https://fcm.googleapis.com:8443/x", None, None, "endpoint", "not a known push service"),
    ("https://u:p@fcm.googleapis.com/x", None, None, "endpoint", "user name"),
    ("ftp://fcm.googleapis.com/x", None, None, "endpoint", "not an http(s) URL"),
    ("https://fcm.googleapis.com/x", "BAAA", None, "keys.p256dh", "not 65"),
    ("https://fcm.googleapis.com/x", "B" + "A" * 86, None, "keys.p256dh", "not a P-256"),
    ("https://fcm.googleapis.com/x", None, "AAAA", "keys.auth", "not 16"),
]


@pytest.mark.parametrize(("endpoint", "p256dh", "auth", "field", "reason"), BAD)
async def test_bad_subscriptions_are_refused_with_a_reason(
    on: Rig, endpoint: str, p256dh: str | None, auth: str | None, field: str, reason: str
) -> None:
    _, browser = on.service.endpoint("any")
    body = browser.subscription(endpoint)
    body["keys"]["p256dh"] = p256dh or body["keys"]["p256dh"]
    body["keys"]["auth"] = auth or body["keys"]["auth"]
    r = await on.api.post("/api/push/subscriptions", json=body)
    assert r.status_code == 422, r.text
    (detail,) = r.json()["detail"]
    assert detail["field"] == field and reason in detail["message"]
    assert on.subscriptions() == []


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://fcm.googleapis.com/fcm/send/abc",
        "https://updates.push.services.mozilla.com/wpush/v2/abc",
        "https://web.push.apple.com/QGx",
        "https://wns2-bl2p.notify.windows.com/w/?token=abc",
    ],
)
async def test_the_known_push_services_are_accepted(on: Rig, endpoint: str) -> None:
    _, browser = on.service.endpoint("any")
    r = await on.api.post("/api/push/subscriptions", json=browser.subscription(endpoint))
    assert r.status_code == 201, r.text
    assert on.subscriptions() == [endpoint]
    r = await on.api.request("DELETE", "/api/push/subscriptions", json={"endpoint": endpoint})
    assert r.status_code == 204 and on.subscriptions() == []


async def test_signing_a_browser_out_deletes_its_subscriptions(on: Rig) -> None:
    assert on.server is not None
    cookie = await signed_in(on.api)
    endpoint, browser = on.service.endpoint("laptop")
    async with httpx.AsyncClient(base_url=on.server.url) as plain:
        r = await plain.post(
            "/api/push/subscriptions",
            json=browser.subscription(endpoint),
            headers={**cookie, "X-CSRF-Token": csrf_token_for(TOKEN)},
        )
    assert r.status_code == 201, r.text
    assert r.json()["signed_in"] is True
    assert (await on.subscribe("script"))["signed_in"] is False
    (signin,) = (await on.api.get("/api/signins")).json()
    assert (await on.api.delete(f"/api/signins/{signin['id']}")).status_code == 204
    assert on.subscriptions() == [f"{on.service.origin}/push/script"]


async def test_without_a_subscription_nothing_is_said(
    rig: Rig, settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.delenv("ANGELIA_PUSH_SUBJECT")

    def refusals() -> int:
        return sum("Push not sent" in r.getMessage() for r in caplog.records)

    async with rig.running(settings):
        sid = await rig.session()
        await wait_for_events(rig.api, sid, count("turn_end"))
        # Once a browser subscribes, the next finished turn says why it cannot be pushed.
        await rig.subscribe()
        await send(rig.api, sid, "again")
        await wait_for_events(rig.api, sid, count("turn_end", 2))
        for _ in range(200):
            if refusals():
                break
            await asyncio.sleep(0.05)
    assert refusals() == 1 and rig.service.pushes == []


async def test_a_question_pushes_without_its_text(on: Rig) -> None:
    await on.subscribe()
    ask = {"tool": "AskUserQuestion", "input": {"questions": QUESTIONS}, "permission": True}
    sid = await on.session([ask, {"text": "thanks"}])
    (push,) = await on.arrived(1)
    assert push.problems == [] and push.headers["urgency"] == "high"
    assert push.message is not None and push.message["session_id"] == sid
    assert push.message["kind"] == "question" and push.message["title"] == "Question waiting"
    assert push.message["body"] == "fake"
    asked = QUESTIONS[0]["question"]
    assert asked and asked not in str(push.message)


async def test_without_a_subject_the_remote_origin_the_server_settled_on_is_used(
    rig: Rig, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The origin comes from the server's own settings (what `--remote-origin` or the record
    # of `angelia remote enable` gave), not only from the environment.
    monkeypatch.delenv("ANGELIA_PUSH_SUBJECT")
    monkeypatch.delenv("ANGELIA_REMOTE_ORIGIN", raising=False)
    settings.remote_origin = "https://desk.tailnet-test.ts.net:8443"
    async with rig.running(settings):
        await rig.subscribe()
        sid = await rig.asking("ls")
        await wait_for_events(rig.api, sid, count("permission_request"))
        (push,) = await rig.arrived(1)
    assert push.problems == []
    assert push.claims["sub"] == "https://desk.tailnet-test.ts.net"
