"""Property tests of the ACP side: session/update lines folded into events, and the
file-system confinement of agent requests (app/brains/acp/updates.py and client.py)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

acp_updates = pytest.importorskip("app.brains.acp.updates")
acp_client = pytest.importorskip("app.brains.acp.client")
acp_schema = pytest.importorskip("acp.schema")

from app.brains.events import BrainEvent  # noqa: E402
from app.transport.framing import parse_json_line  # noqa: E402

PROPS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
word = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=10)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
loose = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
ids = st.sampled_from(["t1", "t2", "t3"])  # a small pool, so updates merge into calls
content_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries(
        {"type": st.just("image"), "data": text, "mimeType": st.just("image/png")}
    ),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": text, "name": text}),
)
tool_content = st.one_of(
    st.fixed_dictionaries({"type": st.just("content"), "content": content_block}),
    st.fixed_dictionaries(
        {"type": st.just("diff"), "path": text, "newText": text},
        optional={"oldText": st.none() | text},
    ),
    st.fixed_dictionaries({"type": st.just("terminal"), "terminalId": word}),
)
tool_fields = {
    "kind": st.sampled_from(
        ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
    ),
    "status": st.sampled_from(["pending", "in_progress", "completed", "failed"]),
    "content": st.lists(tool_content, max_size=3),
    "locations": st.lists(
        st.fixed_dictionaries({"path": text}, optional={"line": st.integers(0, 10**6)}), max_size=2
    ),
    "rawInput": loose,
    "rawOutput": loose,
}
updates = st.one_of(
    st.fixed_dictionaries(
        {
            "sessionUpdate": st.sampled_from(
                ["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
            ),
            "content": content_block,
        },
        optional={"messageId": word},
    ),
    st.fixed_dictionaries(
        {"sessionUpdate": st.just("tool_call"), "toolCallId": ids, "title": text},
        optional=tool_fields,
    ),
    st.fixed_dictionaries(
        {"sessionUpdate": st.just("tool_call_update"), "toolCallId": ids},
        optional={"title": st.none() | text, **tool_fields},
    ),
    st.fixed_dictionaries(
        {
            "sessionUpdate": st.just("plan"),
            "entries": st.lists(
                st.fixed_dictionaries(
                    {
                        "content": text,
                        "priority": st.sampled_from(["high", "medium", "low"]),
                        "status": st.sampled_from(["pending", "in_progress", "completed"]),
                    }
                ),
                max_size=3,
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "sessionUpdate": st.just("usage_update"),
            "used": st.integers(0, 10**9),
            "size": st.integers(0, 10**9),
        },
        optional={
            "cost": st.fixed_dictionaries(
                {
                    "amount": st.floats(allow_nan=False, allow_infinity=False),
                    "currency": st.sampled_from(["USD", "usd", "EUR"]),
                }
            )
        },
    ),
    st.fixed_dictionaries({"sessionUpdate": st.just("current_mode_update"), "currentModeId": word}),
    st.fixed_dictionaries(
        {
            "sessionUpdate": st.just("available_commands_update"),
            "availableCommands": st.lists(
                st.fixed_dictionaries({"name": word, "description": text}), max_size=3
            ),
        }
    ),
    st.fixed_dictionaries(
        {"sessionUpdate": st.just("session_info_update")}, optional={"title": st.none() | text}
    ),
    st.fixed_dictionaries(
        {"sessionUpdate": st.just("config_option_update"), "configOptions": st.just([])}
    ),
)
# A step is an update line, a turn boundary, or a line of noise.
steps = st.one_of(
    updates.map(lambda u: ("update", u)),
    st.just(("turn", None)),
    st.binary(max_size=40).map(lambda b: ("noise", b)),
)


def line_for(update: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": update},
    }
    return json.dumps(message).encode()


def stored(events: list[BrainEvent]) -> None:
    for event in events:
        assert isinstance(event, BrainEvent), event
        json.dumps(event.payload(), allow_nan=False)


@PROPS
@given(script=st.lists(steps, min_size=1, max_size=15), flush_on_tool=st.booleans())
def test_update_lines_fold_into_storable_events(
    script: list[tuple[str, Any]], flush_on_tool: bool
) -> None:
    mapper = acp_updates.UpdateMapper(
        flush_text_on_tool_call=flush_on_tool, mode_names={"code": "default"}
    )
    for kind, value in script:
        if kind == "turn":
            stored(mapper.new_turn())
            continue
        raw = value if kind == "noise" else line_for(value)
        message = parse_json_line(raw)
        if message is None or message.get("method") != "session/update":
            continue
        try:
            note = acp_schema.SessionNotification.model_validate(message["params"])
        except ValidationError:
            # The generated updates are valid by construction; only noise may fail.
            assert kind == "noise", value
            continue
        stored(mapper.apply(note.update))
    stored(mapper.flush())


# -- file-system confinement ------------------------------------------------------------


class _Host:
    session_id = "s1"

    def __init__(self) -> None:
        self.refused: list[str] = []

    def on_refused(self, message: str) -> None:
        self.refused.append(message)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("acp")
    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("a")
    outside = base / "secret"
    outside.mkdir()
    (outside / "key").write_text("k")
    (root / "escape").symlink_to(outside)
    (root / "loop").symlink_to(root / "loop")
    (root / "up").symlink_to("..")
    (base / "project-sibling").mkdir()
    return root, outside


segments = st.sampled_from(
    [
        "src",
        "a.txt",
        "..",
        ".",
        "",
        "escape",
        "up",
        "loop",
        "key",
        "x\x00y",
        "~",
        "project",
        "project-sibling",
        "secret",
        "n" * 300,
    ]
)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(parts=st.lists(segments, max_size=8), absolute=st.booleans(), anchor=st.booleans())
def test_paths_never_escape_the_working_directory(
    sandbox: tuple[Path, Path], parts: list[str], absolute: bool, anchor: bool
) -> None:
    root, outside = sandbox
    host = _Host()
    client = acp_client.AcpClient(host, str(root))
    start = str(root) if anchor else ("/" if absolute else "")
    path = os.path.join(start, *parts) if parts else start
    try:
        target = client._inside("s1", path, "read")
    except acp_client.RequestError:
        assert host.refused, path
        return
    resolved = target.resolve()
    real_root = root.resolve()
    assert resolved == real_root or real_root in resolved.parents, (path, target)
    assert outside.resolve() not in [resolved, *resolved.parents], (path, target)


def test_reads_and_writes_outside_are_refused_end_to_end(sandbox: tuple[Path, Path]) -> None:
    root, outside = sandbox
    host = _Host()
    client = acp_client.AcpClient(host, str(root))

    async def attempts() -> list[str]:
        refused = []
        for path in (
            str(outside / "key"),
            str(root / "escape" / "key"),
            str(root / ".." / "secret" / "key"),
            str(root / "up" / "secret" / "key"),
            "relative/path",
            str(root) + "-sibling/x",
        ):
            try:
                await client.read_text_file(session_id="s1", path=path)
            except acp_client.RequestError:
                refused.append(path)
            try:
                await client.write_text_file(session_id="s1", path=path, content="pwned")
            except acp_client.RequestError:
                refused.append(path)
        return refused

    refused = asyncio.run(attempts())
    assert len(refused) == 12, refused
    assert (outside / "key").read_text() == "k"
    assert not (root.parent / "project-sibling" / "x").exists()
