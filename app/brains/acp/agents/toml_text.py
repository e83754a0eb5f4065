"""TOML text from parsed TOML data (what ``tomllib`` returns), for a config file built from
the user's own: the standard library reads TOML but does not write it.

Tables become ``[a."b.c"]`` sections (a key that is not a bare word is quoted); arrays,
also of tables, are written inline. The text is read back before it is returned, so what
Codex reads is exactly the data given, or nothing is written at all.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import tomllib
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` as a TOML document.

    Raises:
        ValueError: A value TOML cannot hold (None, NaN, an unknown type).
    """
    lines: list[str] = []
    _table(lines, (), doc)
    text = "\n".join(lines) + "\n"
    if tomllib.loads(text) != doc:
        raise ValueError("the configuration does not survive being written as TOML")
    return text


def _table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any]) -> None:
    plain = [(k, v) for k, v in table.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
    if path and (plain or not tables):
        lines += ["", "[" + ".".join(_key(p) for p in path) + "]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in plain]
    for key, sub in tables:
        _table(lines, (*path, key), sub)


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # A JSON string is a TOML basic string, but for DEL, which TOML wants escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            raise ValueError("NaN cannot be written back as the same value")
        return repr(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise ValueError(f"TOML has no value like {value!r}")
