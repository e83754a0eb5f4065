"""Device sessions: what a request through the remote origin must carry.

A device (a phone, a laptop elsewhere) is let in through the remote origin only with a
session of its own, made by pairing it from a signed-in desktop browser. The master token
and the desktop's sign-in cookie are never enough there: both are meant for this machine
only, and the proxy in front forwards whatever the other device sends. Pairing does not
exist yet, so no credential is a device session and every remote request is refused;
this is the one place that will change when it does.
"""

from __future__ import annotations

# Secure, host-only and for the whole site: what the ``__Host-`` prefix makes browsers keep.
DEVICE_COOKIE = "__Host-angelia_dev"


class DeviceSessions:
    """The device sessions this server knows (none yet)."""

    def check(self, secret: str | None) -> str | None:
        """The id of the live device session ``secret`` belongs to, if any."""
        del secret
        return None
