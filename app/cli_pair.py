"""``angelia pair``: pair a phone from the terminal of the computer Angelia runs on.

It asks the running server for a pairing (as a signed-in desktop would: the master token
in a header, to loopback only), prints its link, code and QR code, and once the phone has
redeemed it asks here, "Pair '<name>'? [y/N]", and answers the server. Only "y" (or
"yes") allows; anything else, end of input or Ctrl-C refuses. The Devices page can answer
the same pairing instead; whichever answers first counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

POLL_S = 1.0


def stored_token(path: Path) -> str:
    """The master token kept in the data dir ('' when there is none)."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def running_server_with_token(
    data_dir: Path | None, hint: str = ""
) -> tuple[Path, str, str] | None:
    """The data dir, the URL of the server running on it and the master token; None (said
    on stderr) when no server runs there or no token is found."""
    from app.db.datadir import running_server
    from app.settings import Settings

    settings = Settings(data_dir=data_dir.expanduser().resolve()) if data_dir else Settings()
    url = running_server(settings.data_dir)
    if url is None:
        print(
            f"angelia: no Angelia server is running on {settings.data_dir}; start one with "
            f"'angelia serve'{' ' + hint if hint else ''}.",
            file=sys.stderr,
        )
        return None
    token = settings.token or stored_token(settings.token_path)
    if not token:
        print(f"angelia: no token in {settings.token_path} or ANGELIA_TOKEN.", file=sys.stderr)
        return None
    return settings.data_dir, url, token


def add_parser(sub: Any) -> None:
    pair = sub.add_parser(
        "pair", help="pair a phone: print a QR code and a code, then allow it here"
    )
    pair.add_argument("--data-dir", type=Path, default=None, help="where the database lives")


class Server:
    """The running server's API on loopback, with the master token (never through a proxy)."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method: str, path: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.url}{path.lstrip('/')}",
            data=b"" if method == "POST" else None,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
        )
        try:
            with self._opener.open(request, timeout=10) as response:
                body = response.read()
                return response.status, json.loads(body) if body else None
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                return exc.code, json.loads(body) if body else None
            except ValueError:
                return exc.code, None


def _terminal_qr(url: str) -> str:
    import io

    import segno

    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True)
    return out.getvalue()


def run(args: argparse.Namespace, ask: Callable[[str], str] = input) -> int:
    found = running_server_with_token(args.data_dir)
    if found is None:
        return 1
    _, url, token = found
    server = Server(url, token)
    try:
        status, made = server.call("POST", "/api/pairings")
    except OSError as exc:
        print(f"angelia: the server at {url} did not answer: {exc}", file=sys.stderr)
        return 1
    if status != 201:
        detail = made.get("detail") if isinstance(made, dict) else None
        print(f"angelia: no pairing made: {detail or status}", file=sys.stderr)
        return 1
    code = f"{made['code'][:4]}-{made['code'][4:]}"
    print(_terminal_qr(made["url"]))
    print(f"Scan this with the phone's camera, or open {made['url'].split('#')[0]}")
    print(f"on the phone and type the code {code}. It works once, for 5 minutes.")
    print("Waiting for the phone…", flush=True)
    return _wait_and_answer(server, made["id"], ask)


def _wait_and_answer(server: Server, pairing_id: str, ask: Callable[[str], str]) -> int:
    deadline = time.monotonic() + 5 * 60 + 5
    while time.monotonic() < deadline:
        status, waiting = server.call("GET", "/api/pairings")
        mine = [p for p in waiting or [] if p.get("id") == pairing_id] if status == 200 else []
        if mine:
            break
        time.sleep(POLL_S)
    else:
        print("angelia: the pairing ended unused.", file=sys.stderr)
        return 1
    name = "".join(ch for ch in str(mine[0].get("name", "")) if ch.isprintable())
    try:
        reply = ask(f"Pair '{name}'? [y/N] ")
    except (EOFError, KeyboardInterrupt):
        reply = ""
    allow = reply.strip().lower() in ("y", "yes")
    status, _ = server.call(
        "POST", f"/api/pairings/{pairing_id}/{'approve' if allow else 'refuse'}"
    )
    if status != 204:
        print("angelia: the pairing was answered elsewhere or has ended.", file=sys.stderr)
        return 1
    print(f"Paired '{name}'." if allow else f"Refused '{name}'.")
    return 0 if allow else 1
