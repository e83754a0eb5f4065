"""Where the page templates, static files and database migrations are, as real folders.

They ship inside the package as ``app.templates``, ``app.static`` and ``app.migrations``
(pyproject.toml maps those onto the repository's top-level folders), so the import system
finds them wherever Angelia is installed: in site-packages for a wheel, in the checkout for
an editable install. Looking them up next to this file instead would only work from a
checkout.

Jinja2's FileSystemLoader, Starlette's StaticFiles and Alembic all need a directory on disk,
so an install that is not one (a zip) is refused with a plain message rather than failing
later on the first page.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from app.errors import AppError

REINSTALL = "reinstall Angelia (`pip install -e .` in a checkout, or `pipx install .`)"


class MissingResources(AppError):
    """Part of the installed package cannot be found, so the app cannot run."""

    status = 500


def _folder(package: str, what: str) -> Path:
    try:
        found = resources.files(package)
    except ModuleNotFoundError as exc:
        # Typically an editable install made before these folders became packages: its
        # import hook does not know them yet.
        raise MissingResources(
            f"Angelia's {what} are missing from this installation ({exc}); {REINSTALL}."
        ) from exc
    if not isinstance(found, Path) or not found.is_dir():
        raise MissingResources(
            f"Angelia's {what} ({package}) are not a folder on disk but {found}; {REINSTALL}."
        )
    return found


def templates_dir() -> Path:
    """The Jinja2 templates (``templates/`` in the repository)."""
    return _folder("app.templates", "page templates")


def static_dir() -> Path:
    """The files served under ``/static`` (``static/`` in the repository)."""
    return _folder("app.static", "static files")


def migrations_dir() -> Path:
    """The Alembic script location (``migrations/`` in the repository)."""
    return _folder("app.migrations", "database migrations")
