"""The answer to a request without a credential: a page for a person, JSON for a program.

A browser asking for a page gets the signed-out page (templates/signed_out.html) with
what happened and how to sign in again; it is answered before any credential is known,
so it holds no data of the app and loads only what ``/static/`` serves to anyone. The
JSON API, and clients that ask for JSON, get a JSON body; anything else a line of text.
Every form keeps status 401, which the open pages' scripts watch for (static/js/link.js).
"""

from __future__ import annotations

import json

from jinja2 import Environment
from starlette.datastructures import Headers
from starlette.types import Send

HOW_TO_SIGN_IN = "sign in with the link 'angelia serve' printed or a new one from 'angelia open'."


def wants(headers: Headers, media_type: str) -> bool:
    """True when the Accept header names this media type (a browser's page request names
    text/html; fetch() and event streams do not)."""
    accept = headers.get("accept", "")
    return any(part.split(";")[0].strip() == media_type for part in accept.split(","))


def unauthorized_body(path: str, headers: Headers, pages: Environment) -> tuple[bytes, bytes]:
    """The body and content type of a 401 for this request."""
    if path.startswith("/api/") or (
        wants(headers, "application/json") and not wants(headers, "text/html")
    ):
        detail = f"Unauthorized: send 'Authorization: Bearer <token>', or {HOW_TO_SIGN_IN}"
        return json.dumps({"detail": detail}).encode(), b"application/json"
    if wants(headers, "text/html"):
        page = pages.get_template("signed_out.html").render(refused=True)
        return page.encode(), b"text/html; charset=utf-8"
    return f"Unauthorized: {HOW_TO_SIGN_IN}".encode(), b"text/plain; charset=utf-8"


async def send_unauthorized(
    send: Send,
    path: str,
    headers: Headers,
    pages: Environment,
    security_headers: list[tuple[bytes, bytes]],
) -> None:
    body, ctype = unauthorized_body(path, headers, pages)
    await send_refusal(send, body, ctype, security_headers)


async def send_refusal(
    send: Send, body: bytes, ctype: bytes, security_headers: list[tuple[bytes, bytes]]
) -> None:
    """A 401 with this body (the status the open pages' scripts watch for)."""
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", ctype), *security_headers],
        }
    )
    await send({"type": "http.response.body", "body": body})
