"""The JSON side of setting up an agent: check a path typed for one installed off PATH."""

from __future__ import annotations

from fastapi import APIRouter

from app.schemas import ExecutableIn, ExecutablePublic
from app.services.profiles.executables import check_executable

router = APIRouter(prefix="/api")


@router.post("/backends/check", tags=["meta"])
async def check_agent_path(body: ExecutableIn) -> ExecutablePublic:
    """Check that ``path`` is an agent's executable: an absolute path to a regular,
    executable file that answers ``--version`` with a version within a few seconds.
    It is run without a shell, with a small environment; 422 says what is wrong."""
    checked = await check_executable(body.path)
    return ExecutablePublic(path=checked.path, version=checked.version)
