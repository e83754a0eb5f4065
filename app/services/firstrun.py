"""First run: a default profile so a newcomer can chat at once."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.models import Profile
from app.schemas import ProfileCreate
from app.services import store
from app.services.backends import BackendDetector


async def ensure_default_profile(
    engine: Engine, detector: BackendDetector, cwd: Path
) -> Profile | None:
    """With no profiles and exactly one detected backend, make one for ``cwd``."""
    if store.list_profiles(engine):
        return None
    detected = [name for name in await detector.detected() if name != "acp"]
    if len(detected) != 1:
        return None
    data = ProfileCreate(name=cwd.name or "default", backend=detected[0], cwd=str(cwd))
    return store.create_profile(engine, data=data)
