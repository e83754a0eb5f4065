"""The ``angelia`` command.

The web stack (FastAPI, SQLAlchemy, uvicorn) is imported by ``serve`` alone: ``--help``
and ``doctor`` start without it (bench/startup.py measures them).
"""

from __future__ import annotations

import argparse
import errno
import gc
import ipaddress
import logging
import os
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from app import __version__, cli_pair, cli_remote
from app.cli_pair import running_server_with_token

if TYPE_CHECKING:
    from app.settings import Settings


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _agent_cap(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 1000")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="angelia", description="Chat with coding-agent CLIs.")
    parser.add_argument("--version", action="version", version=f"angelia {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the web app")
    serve.add_argument(
        "--host",
        default=None,
        help="address to bind (default: this install's own loopback address 127.x.y.z)",
    )
    serve.add_argument("--port", type=int, default=None, help="port (default 8765)")
    serve.add_argument("--data-dir", type=Path, default=None, help="where the database lives")
    serve.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    serve.add_argument(
        "--max-agents",
        type=_agent_cap,
        default=None,
        help="agent processes that may run at once (default 16; env ANGELIA_MAX_AGENTS)",
    )
    serve.add_argument(
        "--remote-origin",
        default=None,
        metavar="https://HOST[:PORT]",
        help="the HTTPS address other devices reach Angelia through (a proxy such as "
        "'tailscale serve'; env ANGELIA_REMOTE_ORIGIN; default: what 'angelia remote "
        "enable' recorded). Requests there need a paired device",
    )
    # Once enough to bind a non-loopback address; now refused without a remote origin.
    serve.add_argument("--allow-remote", action="store_true", help=argparse.SUPPRESS)
    opener = sub.add_parser(
        "open", help="sign a browser in to the running server with a new single-use link"
    )
    opener.add_argument("--data-dir", type=Path, default=None, help="where the database lives")
    opener.add_argument(
        "--no-browser", action="store_true", help="print the link instead of opening a browser"
    )
    cli_remote.add_parser(sub)
    cli_pair.add_parser(sub)
    doctor = sub.add_parser("doctor", help="check what Angelia needs on this machine")
    doctor.add_argument("--data-dir", type=Path, default=None, help="where the database lives")
    doctor.add_argument("--json", action="store_true", help="print the facts as JSON")
    return parser


def _own_address(settings: Settings) -> str:
    """This install's loopback address if the OS lets us listen there, else 127.0.0.1."""
    from app.settings import can_bind, install_loopback

    try:
        address = install_loopback(settings.data_dir)
    except OSError as exc:
        _shared_loopback_warning("127.0.0.1", f"its own loopback address could not be kept ({exc})")
        return "127.0.0.1"
    if can_bind(address):
        return address
    _shared_loopback_warning(
        "127.0.0.1",
        f"this system does not route {address} (on macOS, 'sudo ifconfig lo0 alias "
        f"{address} up' adds it)",
    )
    return "127.0.0.1"


def _shared_loopback_warning(host: str, why: str) -> None:
    because = f" because {why}" if why else ""
    print(
        f"WARNING: serving on {host}{because}. A browser sends the cookies of {host} to "
        "every server there, whatever its port: any other local server you open in it (a dev "
        "server, a container's published port) receives Angelia's sign-in cookie and can act "
        "as that browser until you sign it out on the Signed-in browsers page.",
        file=sys.stderr,
        flush=True,
    )


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for uvicorn, so a busy port is known before any URL
    is printed (raises OSError)."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP, as getaddrinfo gives uvicorn: asyncio sets TCP_NODELAY on accepted
    # sockets only when their protocol says TCP, and without it every response that goes
    # out in two writes waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        # As uvicorn's own bind: a port left in TIME_WAIT by a stopped server is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    return sock


def _bind_problem(host: str, port: int, exc: OSError) -> str:
    if exc.errno != errno.EADDRINUSE:
        return f"cannot listen on {host} port {port}: {exc.strerror or exc}; try another --port"
    return (
        f"port {port} on {host} is already in use (by another program, or an Angelia with "
        f"another data dir); start this one on a free port with --port{_free_port_hint(host, port)}"
    )


def _free_port_hint(host: str, port: int) -> str:
    """`` (e.g. --port N)`` with a port after ``port`` that is free on ``host`` now."""
    for candidate in range(port + 1, min(port + 20, 65535)):
        try:
            listen(host, candidate).close()
        except OSError:
            continue
        return f" (e.g. --port {candidate})"
    return ""


def _remote_settings(settings: Settings) -> str | None:
    """Fill the remote origin (else the recorded one) and owner; say what is wrong, if any."""
    from app.services.access.remote import parse_origin, read_record

    record = read_record(settings.data_dir)
    if record is not None:
        settings.remote_origin = settings.remote_origin or record.origin
        settings.remote_owner = record.owner
    if not settings.remote_origin:
        return None
    try:
        settings.remote_origin = parse_origin(settings.remote_origin).origin
    except ValueError as exc:
        return f"the remote origin {exc}"
    return None


def serve(args: argparse.Namespace) -> int:
    from app.db.engine import DataDirError
    from app.main import create_app
    from app.server import AngeliaServer
    from app.services.access.codes import signin_url
    from app.settings import SHARED_LOOPBACK, Settings

    overrides: dict[str, object] = {}
    if args.host is not None:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    if args.data_dir is not None:
        overrides["data_dir"] = args.data_dir.expanduser().resolve()
    if args.max_agents is not None:
        overrides["max_agents"] = args.max_agents
    if args.remote_origin is not None:
        overrides["remote_origin"] = args.remote_origin
    settings = Settings(**overrides)  # type: ignore[arg-type]
    problem = _remote_settings(settings)
    if problem is not None:
        print(f"angelia: {problem}", file=sys.stderr)
        return 2
    if not _is_loopback(settings.host):
        if not settings.remote_origin:
            print(
                f"Refusing to bind {settings.host}: it is not a loopback address and no "
                "remote origin is set. Angelia runs shell commands: keep it on loopback and "
                "let other devices in through an HTTPS proxy ('angelia remote enable', or "
                "--remote-origin https://HOST), where each device must be paired.",
                file=sys.stderr,
            )
            return 2
        print(
            f"WARNING: binding {settings.host}. Other machines reach it over plain HTTP; "
            f"Angelia answers them only as {settings.remote_origin}, for paired devices.",
            file=sys.stderr,
        )

    try:
        app = create_app(settings)
    except DataDirError as exc:
        print(f"angelia: {exc.message}", file=sys.stderr)
        return 1
    if args.host is None and not os.environ.get("ANGELIA_HOST"):
        settings.host = _own_address(settings)
    elif settings.host.lower() in SHARED_LOOPBACK:
        _shared_loopback_warning(settings.host, "")
    try:
        listener = listen(settings.host, settings.port)
    except OSError as exc:
        print(f"angelia: {_bind_problem(settings.host, settings.port, exc)}", file=sys.stderr)
        return 1
    app.state.data_dir_lock.announce(settings.public_url)
    link = signin_url(settings.public_url, app.state.signin_codes.issue())
    print(f"Angelia {__version__} — data in {settings.data_dir}", flush=True)
    _print_link(link)
    if not args.no_browser:
        threading.Timer(1.0, _open_in_browser, (settings.data_dir, link)).start()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # Everything built so far lives as long as the server: keep it out of the collector's
    # full passes, which otherwise stall the event loop for tens of milliseconds.
    gc.collect()
    gc.freeze()
    try:
        AngeliaServer(app, settings.host, settings.port).run(sockets=[listener])
    except KeyboardInterrupt:
        # uvicorn re-raises the Ctrl-C it handled once the server has stopped cleanly.
        return 130
    return 0


def _print_link(link: str) -> None:
    print(f"Open {link}", flush=True)
    print(
        "(It signs in one browser, once, within 2 minutes; 'angelia open' makes a new one.)",
        flush=True,
    )


def _open_in_browser(data_dir: Path, link: str) -> None:
    """Open ``link`` through a private page, so no browser's command line holds it."""
    from app.services.access.codes import opener_page

    webbrowser.open(opener_page(data_dir, link).as_uri())


def open_signin(args: argparse.Namespace) -> int:
    """Ask the running server for a new sign-in link and open it (or print it)."""
    found = running_server_with_token(args.data_dir, "(it opens a browser itself)")
    if found is None:
        return 1
    data_dir, url, token = found
    try:
        link = _new_link(url, token)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"angelia: the server at {url} did not answer: {exc}", file=sys.stderr)
        return 1
    _print_link(link)
    if not args.no_browser:
        _open_in_browser(data_dir, link)
    return 0


def _new_link(url: str, token: str) -> str:
    """POST for a sign-in link; the token goes in a header, never on a command line."""
    import json
    import urllib.request

    request = urllib.request.Request(
        f"{url}api/signin-links",
        data=b"",
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
    )
    # No proxy: the token must reach this machine's server and nothing else.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        link = json.loads(response.read())["url"]
    if not isinstance(link, str) or not link.startswith(url):
        raise OSError("it answered with no sign-in link of its own")
    return link


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "open":
        return open_signin(args)
    if args.command == "remote":
        return cli_remote.run(args)
    if args.command == "pair":
        return cli_pair.run(args)
    if args.command == "doctor":
        from app.services.profiles import doctor

        code, text = doctor.run(args.data_dir, as_json=args.json)
        print(text)
        return code
    return 2


if __name__ == "__main__":
    sys.exit(main())
