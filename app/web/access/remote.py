"""The rules for requests through the remote origin, and for the Tailscale headers.

A request is *remote* when its ``Host`` names the remote origin (the HTTPS proxy in front
keeps the name the other device asked for). Remote requests need a device session
(app/services/access/devices.py); the master token and the desktop's sign-in cookie are
refused there, and a person is shown how to pair instead. Whatever the Host:

* ``Tailscale-Funnel-Request`` is refused: Angelia is never served to the public internet.
* ``Tailscale-User-Login``, when sent, must name the owner recorded by ``angelia remote
  enable``. It proves nothing on its own (any local process can connect to loopback and
  send it), so it only ever refuses, never lets in.

``Origin`` (and a ``Referer`` offered as same-origin proof) must match scheme, host and
port exactly: ``http://<Host>`` for a request on loopback, the remote origin for a
remote one.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

from jinja2 import Environment
from starlette.datastructures import Headers
from starlette.types import Scope

from app.services.access.remote import RemoteOrigin, parse_origin
from app.settings import Settings
from app.web.access.refusals import wants

FUNNEL_HEADER = "tailscale-funnel-request"
USER_LOGIN_HEADER = "tailscale-user-login"
PAIR_REASON = "pair_this_device"
PAIR_DETAIL = (
    "This device is not paired with Angelia. On the computer where Angelia runs, open "
    "Devices and pair this device; the token and the desktop's sign-in do not work here."
)


class RemoteRules:
    """The remote origin (if any) and the owner ``angelia remote enable`` recorded."""

    def __init__(self, origin: RemoteOrigin | None, owner: str | None = None) -> None:
        self.origin = origin
        self.owner = owner

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteRules:
        origin = parse_origin(settings.remote_origin) if settings.remote_origin else None
        return cls(origin, settings.remote_owner or None)

    def is_remote(self, host_header: str) -> bool:
        return self.origin is not None and self.origin.names(host_header)

    def header_refusal(self, headers: Headers) -> str | None:
        """Why the Tailscale headers refuse this request, or None."""
        if FUNNEL_HEADER in headers:
            return "Forbidden: Angelia is not served to the public internet (Funnel)."
        login = headers.get(USER_LOGIN_HEADER)
        if login is not None and self.owner is not None and login != self.owner:
            return "Forbidden: this Tailscale user is not the one Angelia was enabled for."
        return None

    def same_origin(self, url: str, host_header: str, remote: bool) -> bool:
        """True if ``url`` (an Origin or Referer) is exactly this request's own origin."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return False
        if parts.username is not None or "@" in parts.netloc:
            return False
        netloc = parts.netloc.lower()
        if remote:
            assert self.origin is not None
            return parts.scheme == "https" and netloc in self.origin.host_headers
        return parts.scheme == "http" and netloc == host_header.strip().lower()


def foreign_peer(scope: Scope) -> bool:
    """True if the connection comes from another machine (a non-loopback bind): such a
    request may only come in through the remote origin."""
    client = scope.get("client")
    if not client:
        return False
    try:
        return not ipaddress.ip_address(str(client[0])).is_loopback
    except ValueError:
        return False  # not an IP address: an in-process client, not the network


def pair_this_device_body(path: str, headers: Headers, pages: Environment) -> tuple[bytes, bytes]:
    """A 401's body and type for a remote request without a device session."""
    if wants(headers, "text/html") and not path.startswith("/api/"):
        page = pages.get_template("pair_this_device.html").render()
        return page.encode(), b"text/html; charset=utf-8"
    body = json.dumps({"detail": PAIR_DETAIL, "reason": PAIR_REASON})
    return body.encode(), b"application/json"
