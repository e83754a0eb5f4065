"""Web Push in Chromium: "Notify me" registers the service worker and hands the server a
subscription, and a push delivered to that worker shows a notification for the session.

Headless Chromium cannot really subscribe (its push needs Google's FCM), so an init script
stands in for ``PushManager.prototype.subscribe`` with keys this test made as the
"browser" and an endpoint on the fake push service. The server's real push (encrypted,
signed) reaches that service, which decrypts it; the decrypted payload is then delivered
to the page's service worker over CDP, and ``getNotifications()`` shows what the user sees.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.async_api import expect

from app.resources import static_dir
from app.settings import Settings
from tests.api.test_chat import make_session
from tests.browser.conftest import Browsing
from tests.conftest import write_scenario
from tests.fakes.push_service import FakePushService
from tests.helpers import send

SECRET_COMMAND = "cat /home/someone/secret-plans.txt"

STUB = """
(() => {
  const sub = %s;
  const made = { endpoint: sub.endpoint, toJSON: () => sub };
  // Kept across reloads, as a real subscription is.
  PushManager.prototype.subscribe = function () {
    localStorage.setItem("stub-subscribed", "1");
    return Promise.resolve(made);
  };
  PushManager.prototype.getSubscription = function () {
    return Promise.resolve(localStorage.getItem("stub-subscribed") ? made : null);
  };
})();
"""

NOTIFICATIONS = """
navigator.serviceWorker.ready
  .then((r) => r.getNotifications())
  .then((all) => all.map((n) => ({title: n.title, body: n.body, tag: n.tag, data: n.data})))
"""


@pytest.fixture
def push_service() -> Iterator[FakePushService]:
    yield from FakePushService.serving()


@pytest.fixture
def settings(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, push_service: FakePushService
) -> Settings:
    monkeypatch.setenv("ANGELIA_PUSH_SUBJECT", "mailto:owner@example.com")
    monkeypatch.setenv("ANGELIA_PUSH_ENDPOINTS", push_service.origin)
    return settings


async def test_notify_me_subscribes_and_a_push_shows_a_notification(
    browsing: Browsing,
    push_service: FakePushService,
    project_dir: Any,
    fake_claude: dict[str, Any],
) -> None:
    page, server = browsing.page, browsing.server
    endpoint, browser_keys = push_service.endpoint("chromium")
    await page.context.grant_permissions(["notifications"], origin=server.url)
    await page.context.add_init_script(STUB % json.dumps(browser_keys.subscription(endpoint)))
    await browsing.sign_in("/signins")

    button = page.locator("#notify-btn")
    await expect(button).to_be_visible()
    await button.click()
    await expect(page.locator("#pending-said")).to_have_text(
        "Notifications are on for this browser."
    )
    (stored,) = server.app.state.push.subscriptions.all()
    assert stored.endpoint == endpoint and stored.signin_id is not None
    assert (
        await page.evaluate(
            "navigator.serviceWorker.getRegistration('/').then((r) => r && r.scope)"
        )
        == server.url + "/"
    )

    async with server.client() as client:
        tool = {"tool": "Bash", "input": {"command": SECRET_COMMAND}, "permission": True}
        write_scenario(fake_claude["scenario"], [[tool, {"text": "done"}]])
        sid = await make_session(client, project_dir, fake_claude)
        await send(client, sid, "go")
        (push,) = await asyncio.to_thread(push_service.wait_for, 1)
    assert push.problems == [] and push.message is not None

    cdp = await page.context.new_cdp_session(page)
    registrations: list[str] = []
    # Only this server's live registration: the browser is shared with other tests, whose
    # pages (other ports, so other origins) may have workers of their own.
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda event: registrations.extend(
            r["registrationId"]
            for r in event["registrations"]
            if r["scopeURL"] == server.url + "/" and not r.get("isDeleted")
        ),
    )
    await cdp.send("ServiceWorker.enable")
    # Generous waits: on a loaded machine the worker and the notification take seconds.
    for _ in range(400):
        if registrations:
            break
        await asyncio.sleep(0.05)
    # A push that reaches a worker still starting can be dropped by the browser; the same
    # message again is harmless (its tag replaces), so it is delivered up to four times.
    shown: list[dict[str, Any]] = []
    for _ in range(4):
        await cdp.send(
            "ServiceWorker.deliverPushMessage",
            {
                "origin": server.url,
                "registrationId": registrations[-1],
                "data": json.dumps(push.message),
            },
        )
        for _ in range(100):
            shown = await page.evaluate(NOTIFICATIONS)
            if shown:
                break
            await asyncio.sleep(0.05)
        if shown:
            break
    assert shown == [
        {
            "title": "Approval waiting",
            "body": "fake: Bash",
            "tag": f"angelia-{sid}",
            "data": {"url": f"/sessions/{sid}", "kind": "approval"},
        }
    ]
    assert "secret" not in json.dumps(shown)
    assert await browsing.csp_violations() == []
    assert browsing.log.page_errors == [] and browsing.log.console_errors == []
    await page.reload()
    # The page's own check of the subscription has had its turn once this one answers.
    await page.evaluate(
        "navigator.serviceWorker.getRegistration('/').then((r) => r.pushManager.getSubscription())"
    )
    # Subscribed and allowed: nothing left to ask for.
    await expect(button).to_be_hidden()


async def test_the_manifest_and_the_worker_are_served_without_a_sign_in(
    browsing: Browsing,
) -> None:
    async with browsing.server.client() as client:
        client.headers.pop("Authorization")
        manifest = await client.get("/manifest.webmanifest")
        worker = await client.get("/sw.js")
    assert manifest.status_code == 200 and manifest.json()["scope"] == "/"
    assert manifest.headers["content-type"].startswith("application/manifest+json")
    assert worker.status_code == 200 and "showNotification" in worker.text
    assert worker.headers["content-type"].startswith("text/javascript")


PURE = """(src) => {
  const api = new Function("self", src + "; return {noticeFor, openOrFocus};")({
    addEventListener() {},
  });
  const windows = [
    {url: "http://h/", focus() { return "focused /"; }},
    {url: "http://h/sessions/a?x=1", focus() { return "focused a"; }},
  ];
  const open = (url) => "opened " + url;
  return {
    focus: api.openOrFocus(windows, "/sessions/a", open),
    open: api.openOrFocus(windows, "/sessions/b", open),
    notice: api.noticeFor(
      {kind: "approval", session_id: "s", title: "T", body: "B", url: "/sessions/s"}
    ),
    empty: api.noticeFor({}),
    elsewhere: ["//evil.example/x", "/\\\\evil.example", "https://evil.example/"].map(
      (url) => api.noticeFor({url: url}).options.data.url
    ),
  };
}"""


async def test_a_tap_focuses_the_sessions_window_or_opens_it(browsing: Browsing) -> None:
    # On about:blank, where no policy forbids making a function from the worker's text.
    source = (static_dir() / "sw.js").read_text()
    got = await browsing.page.evaluate(PURE, source)
    assert got["focus"] == "focused a" and got["open"] == "opened /sessions/b"
    assert got["notice"] == {
        "title": "T",
        "options": {
            "body": "B",
            "tag": "angelia-s",
            "renotify": True,
            "data": {"url": "/sessions/s", "kind": "approval"},
        },
    }
    assert got["empty"]["title"] == "Angelia" and got["empty"]["options"]["data"]["url"] == "/"
    assert got["elsewhere"] == ["/", "/", "/"]
