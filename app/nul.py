"""No text the API takes may hold a NUL character.

A NUL cannot pass through a command line, a file name or git (Python refuses it with a
ValueError, which became a 500 wherever it surfaced, sometimes after a row was stored),
and no field of the app has a use for one. So it is refused where input comes in, by
one rule: the JSON bodies' shapes derive from ``Input`` (which checks every string,
key and nested value of the raw body before any field is read), and the web layer
applies ``nul_field`` to query, path and form values. A field added later is covered
without a check of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, model_validator

NUL = "\x00"
REFUSAL = "must not contain a NUL character (\\u0000)"


def nul_field(value: Any, where: str = "") -> str | None:
    """The dotted name of the first string in ``value`` that holds a NUL (``where`` if
    ``value`` is such a string itself); None when there is none.

    Iterative, so a deeply nested body is walked without recursion.
    """
    todo: list[tuple[str, Any]] = [(where, value)]
    while todo:
        name, item = todo.pop()
        if isinstance(item, str):
            if NUL in item:
                return name
        elif isinstance(item, dict):
            for key, inner in item.items():
                inner_name = f"{name}.{key}" if name else str(key)
                if isinstance(key, str) and NUL in key:
                    return inner_name
                todo.append((inner_name, inner))
        elif isinstance(item, list | tuple):
            todo.extend((f"{name}.{i}" if name else str(i), v) for i, v in enumerate(item))
    return None


def nul_pair(pairs: Iterable[tuple[str, Any]]) -> str | None:
    """The first name (of a query, path or form) whose name or text holds a NUL."""
    for name, value in pairs:
        if NUL in name or (isinstance(value, str) and NUL in value):
            return shown(name)
    return None


def shown(name: str) -> str:
    """``name`` with its NUL characters written out, fit for a message."""
    return name.replace(NUL, "\\u0000")


class Input(BaseModel):
    """A request body: any string in it, at any depth, that holds a NUL is refused (422)."""

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        found = nul_field(data)
        if found is not None:
            raise ValueError(f"{shown(found) or 'the body'} {REFUSAL}")
        return data
