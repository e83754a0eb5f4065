"""The board's streams end when the server stops, so an open board tab never holds the
shutdown: both the page's stream and the API's, on SIGTERM."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.faults._support import ServerProcess
from tests.faults.test_stop import StreamReader


def test_a_stop_ends_the_board_streams(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "served", tmp_path).start()
    try:
        readers = [
            StreamReader(f"{server.url}/api/board/stream"),
            StreamReader(f"{server.url}/board/live"),
        ]
        for reader in readers:
            reader.start()
            assert reader.connected.wait(10)
            assert reader.error is None, reader.error
        code, _took = server.signal_and_wait(signal.SIGTERM)
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
    assert code == -signal.SIGTERM, server.log()
    for reader in readers:
        reader.join(5)
        assert reader.ended_at is not None, f"{reader.url} was still open"
    log = server.log()
    assert "Traceback" not in log, log
    # Ended by the app's stop, not cancelled by uvicorn once its wait ran out.
    assert "graceful shutdown exceeded" not in log, log
