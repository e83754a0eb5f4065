"""The Jinja environment the pages and the SSE stream render with.

Agent output reaches the page only through autoescaping (with bidi controls made visible
in every ``{{ }}``) or through the ``markdown`` filter (``markdown.markdown_to_html``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.templating import Jinja2Templates
from jinja2 import BytecodeCache, ChainableUndefined, Environment, FileSystemLoader
from jinja2.bccache import Bucket
from markupsafe import Markup

from app.services.permissions.prompts import questions_of
from app.services.sessions.commands import command_entries, command_names
from app.web.formatting import (
    STATUS_LABELS,
    TOOL_OUTPUT_LINES,
    TOOL_STATE_LABELS,
    as_text,
    credential_label,
    decision_text,
    diff_lines,
    format_cost,
    format_duration,
    format_tokens,
    format_when,
    head_lines,
    home_path,
    iso_time,
    line_count,
    pretty_json,
    relative_time,
    relative_to,
    split_output,
    tool_icon,
)
from app.web.markdown import clean_text, markdown_to_html
from app.web.transcript import SSE_SWAP_EVENTS, error_advice


def _markdown_filter(value: object) -> Markup:
    return markdown_to_html(as_text(value))


def _finalize(value: Any) -> Any:
    # Applied to every {{ }} output, so bidi controls in tool names, paths and
    # commands are caught too, not only in Markdown.
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return clean_text(value)
    return value


class _SharedBytecode(BytecodeCache):
    """Compiled templates kept for the life of the process, keyed by source checksum.

    Every app made in one process (each test, the CLI's restarts in place) would otherwise
    parse and compile all templates again; a changed template has a new checksum, so an
    edited file is never served stale.
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_BYTECODE = _SharedBytecode()


def make_templates(templates_dir: Path) -> Jinja2Templates:
    """The one Jinja environment: autoescaping on, every filter and global set here."""
    env = Environment(
        loader=FileSystemLoader(templates_dir),
        autoescape=True,
        # Event payloads vary by backend and age; a missing field renders as nothing.
        undefined=ChainableUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
        bytecode_cache=_BYTECODE,
        # Templates ship with the app and do not change while it runs: no stat of every
        # template file on every render.
        auto_reload=False,
    )
    env.filters.update(
        markdown=_markdown_filter,
        duration=format_duration,
        cost=format_cost,
        tokens=format_tokens,
        when=format_when,
        relative=relative_time,
        iso=iso_time,
        pretty_json=pretty_json,
        as_text=as_text,
        line_count=line_count,
        head_lines=head_lines,
        credential=credential_label,
        home=home_path,
        relative_to=relative_to,
    )
    env.globals.update(
        app_name="Angelia",
        SSE_SWAP_EVENTS=SSE_SWAP_EVENTS,
        STATUS_LABELS=STATUS_LABELS,
        decision_text=decision_text,
        tool_icon=tool_icon,
        diff_lines=diff_lines,
        split_output=split_output,
        command_entries=command_entries,
        command_names=command_names,
        error_advice=error_advice,
        questions_of=questions_of,
        TOOL_STATE_LABELS=TOOL_STATE_LABELS,
        TOOL_OUTPUT_LINES=TOOL_OUTPUT_LINES,
    )
    return Jinja2Templates(env=env)
