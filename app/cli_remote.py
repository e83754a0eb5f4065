"""``angelia remote enable|disable|status``: other devices reach Angelia through
``tailscale serve`` (HTTPS on this machine's tailnet name) while Angelia stays on
loopback.

``enable`` records what it set up in the data dir (0600, app/services/access/remote.py):
``angelia serve`` reads the origin and the owner from there, and ``disable`` undoes
exactly what was set.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from app.services.access import remote, tailscale

if TYPE_CHECKING:
    from app.settings import Settings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("remote", help="let other devices in through 'tailscale serve' (HTTPS)")
    actions = parser.add_subparsers(dest="action", required=True)
    enable = actions.add_parser("enable", help="serve Angelia on this machine's tailnet name")
    enable.add_argument("--print", action="store_true", help="show the command, run nothing")
    enable.add_argument("--port", type=int, default=None, help="Angelia's port, if not running")
    disable = actions.add_parser("disable", help="undo what 'enable' set up")
    status = actions.add_parser("status", help="say whether remote access is on")
    for each in (enable, disable, status):
        each.add_argument("--data-dir", type=Path, default=None, help="where the database lives")


def run(args: argparse.Namespace) -> int:
    from app.settings import Settings  # noqa: F811 (the runtime import; the CLI starts lean)

    overrides = {"data_dir": args.data_dir.expanduser().resolve()} if args.data_dir else {}
    settings = Settings(**overrides)
    try:
        if args.action == "enable":
            return _enable(settings, args)
        if args.action == "disable":
            return _disable(settings.data_dir)
        return _status(settings.data_dir)
    except tailscale.TailscaleError as exc:
        print(f"angelia: {exc}", file=sys.stderr)
        return 1


def _target(settings: Settings, port: int | None) -> str:
    """Angelia's loopback URL: the running server's, else this install's own address."""
    from app.db.datadir import running_server
    from app.settings import install_loopback

    url = running_server(settings.data_dir)
    if url is not None and port is None:
        parts = urlsplit(url)
        return f"http://{parts.hostname}:{parts.port}"
    return f"http://{install_loopback(settings.data_dir)}:{port or settings.port}"


def _enable(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.datadir import make_private_dir

    binary = tailscale.find_tailscale()
    me = tailscale.status(binary)
    command = tailscale.serve_command(_target(settings, args.port))
    origin = remote.parse_origin(f"https://{me.host}").origin
    if args.print:
        print(shlex.join(["tailscale", *command]))
        print(f"(Not run. Once it is, start Angelia with --remote-origin {origin}.)")
        return 0
    tailscale.run(binary, command)
    make_private_dir(settings.data_dir)
    record = remote.RemoteRecord(origin=origin, owner=me.owner, serve=command)
    remote.write_record(settings.data_dir, record)
    print(f"Remote access is on: {origin} (tailscale serve → {command[-1]}).")
    print("Restart 'angelia serve' for it to take effect; each device must then be paired.")
    return 0


def _disable(data_dir: Path) -> int:
    record = remote.read_record(data_dir)
    if record is None:
        print("Remote access is off (nothing was set up with 'angelia remote enable').")
        return 0
    binary = tailscale.find_tailscale()
    https = next((a for a in record.serve if a.startswith("--https=")), "")
    port = int(https.removeprefix("--https=") or tailscale.HTTPS_PORT)
    tailscale.run(binary, tailscale.unserve_command(port))
    remote.remove_record(data_dir)
    print(f"Remote access is off: {record.origin} no longer serves Angelia.")
    print("Restart 'angelia serve' so it stops answering that name.")
    return 0


def _status(data_dir: Path) -> int:
    record = remote.read_record(data_dir)
    if record is None:
        print("Remote access is off.")
        return 0
    print(f"Remote access is on: {record.origin}")
    print(f"Tailscale user: {record.owner or '(not recorded)'}")
    print(f"Set up with: {shlex.join(['tailscale', *record.serve])}")
    return 0
