"""The catalog of ACP agents (``catalog.toml``) and the brain classes made from its rows.

An ACP agent needs no code of its own, only data: how to launch it, what to tell the
user to install, which instructions file it reads, which of Angelia's guarantees it can
keep. Each row becomes a subclass of ``AcpBrain`` whose class attributes are the row,
registered under the row's name like any other brain.

Fields of a row (``[name]``):

* ``label`` (str, required): the agent's name in the UI and in messages.
* ``argv`` (list of str, required): the launch command; ``[]`` means the profile's
  ``command`` must supply it. A profile's ``command`` always replaces ``argv``.
* ``install_hint`` (str, required): what to run to install (and log in).
* ``install_command`` (str): the shell command of the hint alone, for a copy button,
  when the hint says more than that; ``install_note`` (str) is the rest.
* ``instructions_file`` (str): the project file the agent reads, default AGENTS.md.
* ``env`` (table of str): environment the agent always gets (the profile's wins).
* ``modes`` (table of str): Angelia permission mode → the agent's mode id.
* ``capabilities`` (list of ``Capability`` values): what can be enforced; default
  everything the ACP brain does.
* ``limits`` (table of str): capability → why it is missing, for ``check_profile``.
* ``quirks`` (str): what a user should know about the agent.
* ``notice`` (str): what a user must know before choosing it (who can still sign in, say),
  shown by ``angelia doctor`` and the welcome page.
* ``model_flag`` (str): the agent takes the profile's model on its command line with this
  flag (for agents with no model choice over ACP).
* ``effort_limit`` (str): why the agent can never take a reasoning effort; a profile
  with one is then refused.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, cast

from app.brains.acp.brain import AcpBrain
from app.brains.base import Capability

__all__ = ["CatalogEntry", "CatalogError", "brain_class", "catalog_brains", "load_catalog"]

_FIELDS = {
    "label",
    "argv",
    "install_hint",
    "install_command",
    "install_note",
    "instructions_file",
    "env",
    "modes",
    "capabilities",
    "limits",
    "quirks",
    "notice",
    "model_flag",
    "effort_limit",
}


class CatalogError(ValueError):
    """A catalog row is malformed; the message names the row and the field."""


@dataclass(frozen=True)
class CatalogEntry:
    """One row of the catalog, checked."""

    name: str
    label: str
    argv: tuple[str, ...]
    install_hint: str
    install_command: str = ""
    install_note: str = ""
    instructions_file: str = "AGENTS.md"
    env: Mapping[str, str] = field(default_factory=dict)
    modes: Mapping[str, str] = field(default_factory=dict)
    capabilities: frozenset[Capability] = AcpBrain.capabilities
    limits: Mapping[Capability, str] = field(default_factory=dict)
    quirks: str = ""
    notice: str = ""
    model_flag: str = ""
    effort_limit: str = ""

    @classmethod
    def parse(cls, name: str, row: Mapping[str, Any]) -> CatalogEntry:
        """Check one TOML table; raises ``CatalogError`` naming what is wrong."""
        unknown = set(row) - _FIELDS
        if unknown:
            raise CatalogError(f"catalog row {name!r}: unknown fields {sorted(unknown)}")

        def text(key: str, default: str | None = None) -> str:
            value = row.get(key, default)
            if not isinstance(value, str) or (default is None and not value):
                raise CatalogError(f"catalog row {name!r}: {key} must be a non-empty string")
            return value

        def table(key: str) -> dict[str, str]:
            value = row.get(key, {})
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise CatalogError(f"catalog row {name!r}: {key} must be a table of strings")
            return cast(dict[str, str], value)

        argv = row.get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) and a for a in argv):
            raise CatalogError(f"catalog row {name!r}: argv must be a list of strings")
        try:
            capabilities = (
                frozenset(Capability(c) for c in row["capabilities"])
                if "capabilities" in row
                else cls.capabilities
            )
            limits = {Capability(k): v for k, v in table("limits").items()}
        except ValueError as exc:
            raise CatalogError(f"catalog row {name!r}: {exc}") from None
        return cls(
            name=name,
            label=text("label"),
            argv=tuple(argv),
            install_hint=text("install_hint"),
            install_command=text("install_command", ""),
            install_note=text("install_note", ""),
            instructions_file=text("instructions_file", "AGENTS.md"),
            env=table("env"),
            modes=table("modes"),
            capabilities=capabilities,
            limits=limits,
            quirks=text("quirks", ""),
            notice=text("notice", ""),
            model_flag=text("model_flag", ""),
            effort_limit=text("effort_limit", ""),
        )


def load_catalog(text: str | None = None) -> dict[str, CatalogEntry]:
    """Parse the catalog (the packaged ``catalog.toml`` unless ``text`` is given)."""
    if text is None:
        text = resources.files("app.brains").joinpath("catalog.toml").read_text("utf-8")
    rows = tomllib.loads(text)
    entries: dict[str, CatalogEntry] = {}
    for name, row in rows.items():
        if not isinstance(row, dict):
            raise CatalogError(f"catalog entry {name!r} is not a table")
        entries[name] = CatalogEntry.parse(name, row)
    return entries


def brain_class(entry: CatalogEntry) -> type[AcpBrain]:
    """A subclass of ``AcpBrain`` whose class attributes are ``entry``."""
    class_name = "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", entry.name))
    attributes: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": f"{entry.label} over ACP (catalog row {entry.name!r}).",
        "name": entry.name,
        "label": entry.label,
        "executable": entry.argv[0] if entry.argv else "",
        "install_hint": entry.install_hint,
        "install_command": entry.install_command,
        "install_note": entry.install_note,
        "instructions_file": entry.instructions_file,
        "capabilities": entry.capabilities,
        "default_argv": entry.argv,
        "catalog_env": dict(entry.env),
        "mode_map": dict(entry.modes),
        "limits": dict(entry.limits),
        "quirks": entry.quirks,
        "notice": entry.notice,
        "model_flag": entry.model_flag,
        "effort_limit": entry.effort_limit,
    }
    return cast(type[AcpBrain], type(f"{class_name}Brain", (AcpBrain,), attributes))


@functools.cache
def catalog_brains() -> tuple[type[AcpBrain], ...]:
    """One brain class per catalog row, made once so every lookup gets the same class."""
    return tuple(brain_class(entry) for entry in load_catalog().values())
