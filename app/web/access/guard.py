"""Access control for a local app that can run shell commands.

Checks, in order, for every HTTP request: the Host header names this server (DNS
rebinding), a foreign Origin is refused whatever the credentials, then the credential —
the master token as a bearer header, or the HttpOnly cookie of a browser sign-in that
a single-use ``/signin?code=…`` link (app/services/access/codes.py) or, for programs and
scripts, a ``/?token=…`` URL creates (app/services/access/signins.py). The cookie never holds
the master token: a browser sends it to every port of its host, so another server there
must not receive anything it could replay as the token. Cookie-authenticated requests
that change state must also prove they come from our own pages (same-origin
Origin/Referer, or the CSRF header htmx sends).
"""

from __future__ import annotations

import hmac
import html
from collections.abc import Callable
from functools import partial
from urllib.parse import parse_qsl, quote, urlencode

import anyio
from jinja2 import Environment
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.resources import templates_dir
from app.services.access.codes import Outcome, SignInCodes
from app.services.access.devices import DEVICE_COOKIE, DeviceSessions
from app.services.access.signins import LIFETIME, SignIns
from app.settings import Settings
from app.web.access.refusals import send_refusal, send_unauthorized
from app.web.access.remote import RemoteRules, foreign_peer, pair_this_device_body
from app.web.render import make_templates
from app.web.security import (
    SAFE_METHODS,
    SECURITY_HEADERS,
    csrf_token_for,
    plain_response,
    with_security_headers,
)

COOKIE_NAME = "angelia_signin"
# What a redirect path may keep unescaped; everything else (spaces, CR/LF, non-ASCII) is quoted.
_PATH_SAFE = "/!$&'()*+,;=:@-._~"
# The service worker and the manifest hold nothing secret, and a browser fetches the
# manifest without its cookie.
PUBLIC_PATHS = ("/api/health", "/sw.js", "/manifest.webmanifest")
SIGNIN_PATH = "/signin"
_SIGNED_IN_PAGE = (
    b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
    b'<meta http-equiv="refresh" content="0;url=/"><title>Signed in - Angelia</title></head>\n'
    b'<body><main><h1>Signed in</h1><p><a href="/">Open Angelia</a></p></main></body></html>\n'
)
_CODE_REFUSED = {
    Outcome.USED: "This sign-in link was used already: each one signs in one browser, once.",
    Outcome.EXPIRED: "This sign-in link has expired: each one works for 2 minutes.",
    Outcome.UNKNOWN: "This sign-in link is not one this server made (a restart forgets "
    "the links made before it).",
}
PUBLIC_PREFIXES = ("/static/",)
# What a phone without a device session may reach through the remote origin: the pairing
# page and its two calls (app/web/access/devices.py).
PAIRING_PATHS = frozenset(
    {
        ("GET", "/pair"),
        ("POST", "/api/pairings/redeem"),
        ("POST", "/api/pairings/redeem/status"),
    }
)


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: Settings,
        token: str,
        signins: SignIns,
        codes: SignInCodes | None = None,
        pages: Environment | None = None,
        devices: DeviceSessions | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.token = token
        self.signins = signins
        self.codes = codes or SignInCodes()
        self.csrf = csrf_token_for(token)
        self.remote = RemoteRules.from_settings(settings)
        self.devices = devices or DeviceSessions()
        # Renders the signed-out page a browser without a sign-in is answered with.
        self.pages = pages or make_templates(templates_dir()).env

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path: str = scope["path"]
        method: str = scope["method"]
        host = headers.get("host", "")

        remote = self.remote.is_remote(host)
        refusal = self._refusal(scope, headers, host, remote)
        if refusal is not None:
            await plain_response(send, 403, refusal)
            return
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, with_security_headers(send))
            return
        if remote:
            await self._remote(scope, receive, send, headers)
            return

        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if method == "GET" and path == SIGNIN_PATH:
            await self._code_login(send, query.get("code", ""), headers)
            return
        if method == "GET" and "token" in query:
            await self._token_login(scope, send, query, headers)
            return

        signin_id = None
        if not self._bearer_ok(headers.get("authorization", "")):
            signin_id = await self._signed_in(headers)
            if signin_id is None:
                await send_unauthorized(send, path, headers, self.pages, SECURITY_HEADERS)
                return
            if method not in SAFE_METHODS and not self._csrf_ok(headers, host, remote=False):
                await plain_response(send, 403, "Forbidden: missing same-origin proof (CSRF).")
                return
            receive, send = _while_alive(partial(self.signins.alive, signin_id), receive, send)
        state = scope.setdefault("state", {})
        state["csrf_token"] = self.csrf
        state["signin_id"] = signin_id
        state["device_id"] = None
        state["remote"] = False
        await self.app(scope, receive, with_security_headers(send))

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The same Host, Origin and credential checks for an upgrade (CORS does not cover it).

        A refusal closes before accepting, which the server answers with HTTP 403.
        """
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        remote = self.remote.is_remote(host)
        if self._refusal(scope, headers, host, remote) is not None:
            ok = False
        elif remote:
            ok = await self._device(headers) is not None
        else:
            ok = (
                self._bearer_ok(headers.get("authorization", ""))
                or await self._signed_in(headers) is not None
            )
        if not ok:
            await send({"type": "websocket.close", "code": 1008})
            return
        scope.setdefault("state", {})["csrf_token"] = self.csrf
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers, host: str, remote: bool) -> str | None:
        """Why the request is refused before any credential is looked at (403), or None.

        The Host must be a loopback name of this server or the remote origin (DNS
        rebinding); a connection from another machine must come through the remote origin;
        the Tailscale headers must not say Funnel or another user; a foreign Origin is
        refused whatever the credentials.
        """
        if not remote and not self.settings.host_allowed(host):
            return "Forbidden: unknown Host header."
        if not remote and foreign_peer(scope):
            return "Forbidden: from another machine, Angelia answers only its remote origin."
        refusal = self.remote.header_refusal(headers)
        if refusal is not None:
            return refusal
        origin = headers.get("origin")
        if origin is not None and not self.remote.same_origin(origin, host, remote):
            return "Forbidden: cross-origin request."
        return None

    async def _remote(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """A request through the remote origin: only a device session lets it in, but for
        the pairing page and its two calls, which a phone needs before it has one."""
        device_id = await self._device(headers)
        method: str = scope["method"]
        if device_id is None and (method, scope["path"]) not in PAIRING_PATHS:
            body, ctype = pair_this_device_body(scope["path"], headers, self.pages)
            await send_refusal(send, body, ctype, SECURITY_HEADERS)
            return
        if method not in SAFE_METHODS:
            # Without a session yet (a redeem) there is no CSRF token to send: the page's
            # own Origin is the proof, and a request without one is not same-origin.
            ok = (
                self._csrf_ok(headers, headers.get("host", ""), remote=True)
                if device_id is not None
                else headers.get("origin") is not None
            )
            if not ok:
                await plain_response(send, 403, "Forbidden: missing same-origin proof (CSRF).")
                return
        if device_id is not None:
            receive, send = _while_alive(partial(self.devices.alive, device_id), receive, send)
        state = scope.setdefault("state", {})
        state["csrf_token"] = self.csrf
        state["signin_id"] = None
        state["device_id"] = device_id
        state["remote"] = True
        await self.app(scope, receive, with_security_headers(send))

    async def _device(self, headers: Headers) -> str | None:
        """The id of the live device session the request's device cookie belongs to."""
        checked = self.devices.check(_cookie(headers, DEVICE_COOKIE))
        if checked is None:
            return None
        if checked.touch_due:
            await anyio.to_thread.run_sync(self.devices.touch, checked.id)
        return checked.id

    async def _signed_in(self, headers: Headers) -> str | None:
        """The id of the live sign-in the request's cookie belongs to, if any."""
        checked = self.signins.check(_cookie(headers, COOKIE_NAME))
        if checked is None:
            return None
        if checked.touch_due:
            await anyio.to_thread.run_sync(self.signins.touch, checked.id)
        return checked.id

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(
            candidate.encode(), self.token.encode()
        )

    def _bearer_ok(self, auth: str) -> bool:
        scheme, _, value = auth.partition(" ")
        return scheme.lower() == "bearer" and self._matches(value.strip())

    def _csrf_ok(self, headers: Headers, host: str, *, remote: bool) -> bool:
        if headers.get("origin") is not None:
            return True  # already checked to be same-origin
        referer = headers.get("referer")
        if referer and self.remote.same_origin(referer, host, remote):
            return True
        sent = headers.get("x-csrf-token", "")
        return hmac.compare_digest(sent.encode(), self.csrf.encode())

    async def _token_login(
        self, scope: Scope, send: Send, query: dict[str, str], headers: Headers
    ) -> None:
        """``/?token=…`` (scripts, tests): check the master token, sign in, drop the token."""
        if not self._matches(query.pop("token")):
            await plain_response(
                send, 401, "Unauthorized: that token is not valid for this server."
            )
            return
        path: str = scope["path"]
        if any(not ch.isprintable() for ch in path):
            await plain_response(
                send, 400, "Bad request: the sign-in URL's path has control characters."
            )
            return
        # "//host/…" (or "/\\host/…", which browsers read the same way) would be a
        # protocol-relative redirect to another site.
        path = quote("/" + path.lstrip("/\\"), safe=_PATH_SAFE)
        location = path + (("?" + urlencode(query)) if query else "")
        await self._sign_in_and_go(send, location, headers)

    async def _code_login(self, send: Send, code: str, headers: Headers) -> None:
        """A link from ``angelia serve`` or ``angelia open``: good once, for 2 minutes.

        It answers with a page that moves on to ``/`` itself rather than a redirect: the
        browser opens the link from a file (``open.html``), and a redirect would carry that
        cross-site start along, so the SameSite=Strict cookie just set would not be sent.
        """
        outcome = self.codes.redeem(code)
        if outcome is not Outcome.OK:
            await _refused_link(send, _CODE_REFUSED[outcome])
            return
        await self._sign_in(send, headers, 200, [(b"content-type", b"text/html; charset=utf-8")])
        await send({"type": "http.response.body", "body": _SIGNED_IN_PAGE})

    async def _sign_in_and_go(self, send: Send, location: str, headers: Headers) -> None:
        await self._sign_in(send, headers, 303, [(b"location", location.encode())])
        await send({"type": "http.response.body", "body": b""})

    async def _sign_in(
        self, send: Send, headers: Headers, status: int, extra: list[tuple[bytes, bytes]]
    ) -> None:
        """Start the response that signs this browser in (sets its cookie)."""
        # A browser that is signed in already (the URL opened twice) keeps its sign-in.
        if await self._signed_in(headers) is None:
            agent = headers.get("user-agent", "")
            _, secret = await anyio.to_thread.run_sync(self.signins.create, agent)
            cookie = (
                f"{COOKIE_NAME}={secret}; HttpOnly; SameSite=Strict; Path=/; "
                f"Max-Age={int(LIFETIME.total_seconds())}"
            )
            extra = [*extra, (b"set-cookie", cookie.encode())]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*extra, *SECURITY_HEADERS],
            }
        )


def _while_alive(alive: Callable[[], bool], receive: Receive, send: Send) -> tuple[Receive, Send]:
    """End an event stream once its sign-in or device session is revoked.

    The stream's next event is not sent: the response ends there instead, and the
    stream's own disconnect check (every few seconds when idle) sees the client gone.
    """
    streaming = False
    ended = False

    async def checked_receive() -> Message:
        if streaming and not alive():
            return {"type": "http.disconnect"}
        return await receive()

    async def checked_send(message: Message) -> None:
        nonlocal streaming, ended
        if message["type"] == "http.response.start":
            ctype = Headers(raw=message.get("headers", [])).get("content-type", "")
            streaming = ctype.startswith("text/event-stream")
        elif streaming and message["type"] == "http.response.body":
            if ended:
                return
            if not alive():
                ended = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return checked_receive, checked_send


def _cookie(headers: Headers, name: str) -> str | None:
    for chunk in headers.get("cookie", "").split(";"):
        key, _, value = chunk.strip().partition("=")
        if key == name:
            return value
    return None


async def _refused_link(send: Send, why: str) -> None:
    """A page a person reads: why the link did not sign them in, and what to do."""
    body = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Sign-in link refused — Angelia</title></head>\n<body><main>"
        "<h1>This link did not sign you in</h1>"
        f"<p>{html.escape(why)}</p>"
        "<p>To sign this browser in, run <code>angelia open</code> on the computer where "
        "Angelia runs: it opens a new link.</p></main></body></html>\n"
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"text/html; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})
