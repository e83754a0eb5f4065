"""Big lines parsed in the parser process (app/transport/bigparse.py): the same value as
a parse here, what the parse logs logged here, and a parser that dies replaced."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator

import pytest

from app.transport.bigparse import BigLineParser
from app.transport.framing import BIG_LINE_BYTES, parse_big_json_line
from tests.brains.test_big_lines import LINES, padded


@pytest.fixture
def parser() -> Iterator[BigLineParser]:
    parser = BigLineParser()
    yield parser
    parser.close()


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_the_parser_process_gives_what_a_parse_here_gives(
    parser: BigLineParser, line: bytes
) -> None:
    # repr: NaN is not equal to itself, and a value that went through a pipe is a new one.
    assert repr(parser.parse(line)) == repr(parse_big_json_line(line))
    assert repr(parser.parse(bytearray(line))) == repr(parse_big_json_line(line))


def test_one_child_parses_line_after_line_in_a_session_of_its_own(parser: BigLineParser) -> None:
    line = padded(b'"text":"\\u00e9\\n"}', BIG_LINE_BYTES)
    first = parser.parse(line)
    pid = parser.pid
    assert pid is not None and pid != os.getpid()
    assert parser.parse(line) == first and parser.pid == pid
    # Its own session: a Ctrl-C at the app's terminal is not sent to it.
    assert os.getsid(pid) == pid != os.getsid(0)


def test_what_the_parse_logs_is_logged_here(
    parser: BigLineParser, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="app.transport.framing"):
        assert parser.parse(padded(b'"broken"', BIG_LINE_BYTES)) is None
    [record] = [r for r in caplog.records if r.name == "app.transport.framing"]
    assert "skipping corrupt JSON line" in record.getMessage()


def test_a_parser_that_died_is_replaced_and_no_line_is_lost(parser: BigLineParser) -> None:
    line = padded(b'"n":1}', BIG_LINE_BYTES)
    expected = parse_big_json_line(line)
    assert expected is not None and expected["n"] == 1
    assert parser.parse(line) == expected
    first = parser.pid
    assert first is not None
    # Killed with a line on its way or before: that line is parsed here, the next one by
    # a new child.
    os.kill(first, signal.SIGKILL)
    assert parser.parse(line) == expected
    assert parser.parse(line) == expected
    assert parser.pid not in (None, first)
