"""``angelia serve`` as a real child process, for tests that kill it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import TOKEN
from tests.security._support import REPO, free_port


def _as_in_a_terminal() -> None:
    # A run started in the background of a script inherits an ignored SIGINT; the server is
    # tested as a terminal starts it, where Ctrl-C is SIGINT's default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ServerProcess:
    """One run of ``angelia serve`` on a data dir; output goes to a log file.

    By default the checkout's ``python -m app.cli`` runs in the checkout; ``command``, ``cwd``
    and ``env`` run another ``angelia`` elsewhere (an installed one, say). ``host`` None
    leaves the address to ``angelia serve`` (its per-install one): ``url`` is then read
    from the link it prints. ``signin_url`` is the ``/?token=`` URL a script would use;
    ``printed_link`` the single-use one ``angelia serve`` printed. With ``browser`` set,
    ``serve`` opens a browser (the ``BROWSER`` of ``env`` says which); ``extra_args`` are
    more options for ``serve``.
    """

    def __init__(
        self,
        data_dir: Path,
        log_dir: Path,
        *,
        port: int | None = None,
        command: list[str] | None = None,
        cwd: Path = REPO,
        env: dict[str, str] | None = None,
        host: str | None = "127.0.0.1",
        browser: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.host = host
        self.url = f"http://{host}:{self.port}" if host else ""
        self.signin_url = f"{self.url}/?token={TOKEN}" if host else ""
        self.log_path = log_dir / f"server-{self.port}-{time.monotonic_ns()}.log"
        self.command = command or [sys.executable, "-m", "app.cli"]
        self.cwd = cwd
        self.env = os.environ if env is None else env
        self.browser = browser
        self.extra_args = extra_args
        self.printed_link = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> ServerProcess:
        env = {**self.env, "ANGELIA_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
        env.pop("ANGELIA_DATA_DIR", None)
        argv = [*self.command, "serve", "--port", str(self.port)]
        argv += ["--data-dir", str(self.data_dir)]
        if not self.browser:
            argv.append("--no-browser")
        if self.host:
            argv += ["--host", self.host]
        argv += self.extra_args
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, cwd=self.cwd, env=env, stdout=log, stderr=log, preexec_fn=_as_in_a_terminal
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}: {self.log()}")
            if not self.url:
                self._read_printed_url()
                time.sleep(0.05)
                continue
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    self._read_printed_url()  # printed before it listened
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"server did not start: {self.log()}")

    def _read_printed_url(self) -> None:
        found = re.search(r"^Open (http://\S+?)/signin\?code=\S+$", self.log(), re.MULTILINE)
        if found:
            self.printed_link = found.group(0).removeprefix("Open ")
            self.url = self.url or found.group(1)
            self.signin_url = f"{self.url}/?token={TOKEN}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )

    def signal_and_wait(self, sig: signal.Signals, timeout: float = 15.0) -> tuple[int, float]:
        """Send ``sig`` and wait for the exit: (exit status, seconds it took)."""
        assert self.proc is not None
        signalled = time.monotonic()
        os.kill(self.proc.pid, sig)
        code = self.proc.wait(timeout=timeout)
        return code, time.monotonic() - signalled

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM (uvicorn's graceful shutdown), then SIGKILL if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(f"server ignored SIGTERM for {timeout} s: {self.log()}") from None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


def fake_starts(fake: dict[str, Any]) -> list[dict[str, Any]]:
    """The fake claude's log entries for each process start (argv, pid, …)."""
    path: Path = fake["log"]
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines) if "argv" in e]


def wait_until(predicate: object, timeout: float, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
