"""What ``angelia remote`` asks of Tailscale: is it running, under which name and user,
and serving Angelia's loopback address over HTTPS (``tailscale serve``).

Only the ``tailscale`` command is used (found on PATH), never its local API, so what
runs is what a user could type. Each call is bounded in time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

HTTPS_PORT = 443
TIMEOUT_S = 30.0


class TailscaleError(Exception):
    """Something a person must fix before remote access can be switched on or off."""


@dataclass(frozen=True)
class TailscaleSelf:
    host: str  # this machine's MagicDNS name, without the trailing dot
    owner: str | None  # the login name of the user this machine is signed in as


def find_tailscale() -> str:
    found = shutil.which("tailscale")
    if found is None:
        raise TailscaleError(
            "the 'tailscale' command is not on PATH. Install Tailscale on this computer "
            "and on the other device, sign both in to the same tailnet, then run this again."
        )
    return found


def _run(tailscale: str, *args: str) -> str:
    try:
        done = subprocess.run(
            [tailscale, *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TailscaleError(f"'tailscale {' '.join(args)}' did not run: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise TailscaleError(f"'tailscale {' '.join(args)}' failed: {said}")
    return done.stdout


def status(tailscale: str) -> TailscaleSelf:
    """This machine as ``tailscale status --json`` describes it; it must be running."""
    try:
        data = json.loads(_run(tailscale, "status", "--json"))
    except ValueError:
        raise TailscaleError("'tailscale status --json' did not print JSON") from None
    state = data.get("BackendState") if isinstance(data, dict) else None
    if state != "Running":
        raise TailscaleError(
            f"Tailscale is not running here (its state is {state or 'unknown'}); "
            "run 'tailscale up' and sign in, then run this again."
        )
    me = data.get("Self") or {}
    host = str(me.get("DNSName") or "").rstrip(".").lower()
    if not host:
        raise TailscaleError(
            "this machine has no MagicDNS name: switch on MagicDNS and HTTPS "
            "certificates for the tailnet in Tailscale's admin console."
        )
    user = (data.get("User") or {}).get(str(me.get("UserID")), {})
    owner = user.get("LoginName") if isinstance(user, dict) else None
    return TailscaleSelf(host, owner if isinstance(owner, str) and owner else None)


def serve_command(target: str, https_port: int = HTTPS_PORT) -> list[str]:
    """The arguments that serve ``target`` (``http://127.x.y.z:port``) over HTTPS."""
    return ["serve", "--bg", f"--https={https_port}", target]


def unserve_command(https_port: int = HTTPS_PORT) -> list[str]:
    """The arguments that undo ``serve_command`` (and nothing else ``serve`` serves)."""
    return ["serve", f"--https={https_port}", "off"]


def run(tailscale: str, args: list[str]) -> None:
    _run(tailscale, *args)
