"""The instructions file an agent reads in its folder (CLAUDE.md, AGENTS.md, …)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.brains import get_brain_class
from app.db.models import Profile
from app.errors import ConflictError, ValidationFailed

MAX_BYTES = 256 * 1024

TEMPLATE = """# {project}

## About this project
One or two sentences about what this code does.

## How to run the tests
{test_command}

## Rules
- Ask before deleting files or rewriting history.
- Keep changes small and explain why in the commit message.
"""


def instructions_path(profile: Profile) -> Path:
    name = get_brain_class(profile.backend).instructions_file
    return Path(profile.cwd) / name


def template_for(profile: Profile, test_command: str = "") -> str:
    return TEMPLATE.format(
        project=Path(profile.cwd).name or "Project",
        test_command=test_command or "Describe the command that runs the tests.",
    )


def describe(profile: Profile) -> dict[str, Any]:
    path = instructions_path(profile)
    exists = path.is_file()
    return {
        "path": str(path),
        "file_name": path.name,
        "exists": exists,
        "content": path.read_text(encoding="utf-8", errors="replace") if exists else None,
        "template": template_for(profile),
    }


def write(profile: Profile, content: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Write the file; an existing one is only replaced with ``overwrite`` (else 409)."""
    if len(content.encode()) > MAX_BYTES:
        raise ValidationFailed("content", f"is larger than {MAX_BYTES // 1024} KiB")
    path = instructions_path(profile)
    if not path.parent.is_dir():
        raise ValidationFailed("cwd", f"{path.parent} does not exist")
    existed = path.exists()
    if existed and not overwrite:
        raise ConflictError(
            f"{path.name} already exists in {path.parent}; review the difference and "
            "confirm to overwrite it."
        )
    path.write_text(content, encoding="utf-8")
    return {"path": str(path), "file_name": path.name, "overwritten": existed}
