"""First run: a default profile so a newcomer can chat at once, and the agent the
wizard suggests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from app.db.models import Profile
from app.schemas import ProfileCreate
from app.services import store
from app.services.backends import BackendDetector


async def ensure_default_profile(
    engine: Engine, detector: BackendDetector, cwd: Path
) -> Profile | None:
    """With no profiles and exactly one detected backend, make one for ``cwd``.

    None when ``cwd`` cannot be a profile's folder (the home folder itself, a system
    folder): the wizard then asks for one."""
    if store.list_profiles(engine):
        return None
    detected = [name for name in await detector.detected() if name != "acp"]
    if len(detected) != 1:
        return None
    try:
        data = ProfileCreate(name=cwd.name or "default", backend=detected[0], cwd=str(cwd))
    except ValidationError:
        return None
    return store.create_profile(engine, data=data)


def split_backends(
    described: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(found, missing) of ``BackendDetector.describe_all()``, Claude Code first.

    The generic ACP backend has no executable of its own, so it is in neither: it is for
    the full profile form, not for a first run."""
    found = [b for b in described if b["found"] and b["executable"]]
    missing = [b for b in described if not b["found"] and b["executable"]]
    found.sort(key=_wizard_order)
    missing.sort(key=_wizard_order)
    return found, missing


def suggested_backend(found: Sequence[str]) -> str:
    """The backend a newcomer starts with, from the names found (in the wizard's order).

    Claude Code when it is found or nothing is (so the page can say how to install it),
    else the first one; with exactly one found, it is the one ``ensure_default_profile``
    makes a profile for."""
    return "claude" if "claude" in found or not found else found[0]


def _wizard_order(backend: dict[str, Any]) -> tuple[bool, str]:
    return backend["name"] != "claude", str(backend["label"]).casefold()
