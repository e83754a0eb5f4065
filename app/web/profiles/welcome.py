"""The first-run wizard: pick an agent, a folder and a permission mode, then chat.

One page with three fieldsets, so it works as a plain form with the keyboard and a
screen reader; the index sends a fresh data dir here. It ends by creating a profile and
a session, and optionally the agent's instructions file, which it never overwrites
without showing the difference and getting a tick. Above the form, the facts of
``angelia doctor`` say what this machine has, opened when something is wrong.

An agent that is not on PATH is not a dead end: "I have it elsewhere" takes the path of
its executable, checks it (``/welcome/check``, and again on submit) and makes that path
the profile's command.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.brains import available_backends
from app.brains.base import PERMISSION_MODES
from app.db.models import Profile
from app.errors import AppError
from app.services.profiles import doctor, firstrun, instructions
from app.services.profiles.executables import ExecutableRefused, check_executable
from app.services.store import store
from app.web.context import base_context
from app.web.deps import AppState, StateDep
from app.web.profiles.files import fingerprint, unified
from app.web.profiles.form import BYPASS_WORD, MODE_HELP, read_form, summary

router = APIRouter(include_in_schema=False)

# Stands for the folder's name in the template profiles.js fills in.
PROJECT_SLOT = "{project}"
WIZARD_LABELS = {
    "backend": "Agent",
    "cwd": "Project folder",
    "permission_mode": "Permission mode",
    "bypass_confirm": "Bypass confirmation",
    "instructions": "Instructions",
}


@router.get("/welcome", response_class=HTMLResponse)
async def welcome(request: Request, state: StateDep) -> HTMLResponse:
    found, _ = await _backends(state)
    backend = firstrun.suggested_backend([b["name"] for b in found])
    cwd = firstrun.suggested_folder(Path.cwd())
    values: dict[str, Any] = {
        "backend": backend,
        "cwd": cwd,
        "permission_mode": "default",
        "bypass_confirm": "",
        "create_instructions": False,
        "instructions": _template(backend, cwd),
        "template_cwd": cwd,
        "paths": {},
    }
    return await _page(request, state, values)


@router.post("/welcome/check", response_class=HTMLResponse)
async def check_path(request: Request, state: StateDep) -> HTMLResponse:
    """The result of checking one "I have it elsewhere" path, as the fragment that goes
    in its live region. htmx only swaps 2xx answers, so it gets a refusal with 200."""
    form = await request.form()
    name = str(form.get("check", ""))
    typed = str(form.get(f"path_{name}", ""))
    _, missing = await _backends(state)
    backend = next((b for b in missing if b["name"] == name), None)
    if backend is None:
        result = {"ok": False, "message": "Pick one of the agents listed under it."}
    else:
        result = await _check(typed)
    status = 200 if result["ok"] or request.headers.get("hx-request") == "true" else 422
    context = {"request": request, "b": backend or {"name": name}, "result": result}
    return state.templates.TemplateResponse(
        request, "_elsewhere_result.html", context, status_code=status
    )


@router.post("/welcome", response_model=None)
async def finish(request: Request, state: StateDep) -> Response:
    form = await request.form()
    raw = {key: value for key, value in form.items() if isinstance(value, str)}
    values: dict[str, Any] = {
        "backend": raw.get("backend", ""),
        "cwd": raw.get("cwd", ""),
        "permission_mode": raw.get("permission_mode", "default"),
        "bypass_confirm": raw.get("bypass_confirm", ""),
        "create_instructions": bool(raw.get("create_instructions")),
        # Browsers send a textarea's line breaks as CRLF; the file gets the text as typed.
        "instructions": raw.get("instructions", "").replace("\r\n", "\n"),
        "template_cwd": raw.get("template_cwd", ""),
        # "I have it elsewhere": a path typed for an agent not found on PATH.
        "paths": {
            key.removeprefix("path_"): value
            for key, value in raw.items()
            if key.startswith("path_") and value
        },
    }
    if not values["backend"] and len(values["paths"]) == 1:
        # Without script there is no radio to tick for it: the one path typed says which.
        values["backend"] = next(iter(values["paths"]))
    found, missing = await _backends(state)
    command = ""
    errors: dict[str, str] = {}
    elsewhere: dict[str, dict[str, Any]] = {}
    backend = values["backend"]
    typed = values["paths"].get(backend, "")
    on_machine = next((b for b in found if b["name"] == backend), None)
    if on_machine is not None:
        if on_machine["source"] == "command":
            # Found only through another profile's command: the new one runs it too.
            command = shlex.join([on_machine["path"]])
    elif typed and backend in {b["name"] for b in missing}:
        elsewhere[backend] = result = await _check(typed)
        if result["ok"]:
            command = shlex.join([result["path"]])
        else:
            errors[f"path_{backend}"] = result["message"]
    else:
        errors["backend"] = _not_found(backend)
    cwd = values["cwd"].strip()
    data, checked = read_form(
        {
            "name": Path(cwd).name or "default",
            "backend": backend,
            "cwd": cwd,
            "permission_mode": values["permission_mode"],
            "bypass_confirm": values["bypass_confirm"],
            "command": command,
        }
    )
    errors = checked.errors | errors
    if data is None or errors:
        return await _page(request, state, values, errors, elsewhere=elsewhere, status_code=422)

    probe = Profile(name=data.name, backend=data.backend, cwd=data.cwd)
    if values["create_instructions"]:
        content = values["instructions"]
        # The text was made for the folder shown first; untouched, it follows the choice.
        if content == _template(data.backend, values["template_cwd"]):
            content = values["instructions"] = instructions.template_for(probe)
            values["template_cwd"] = data.cwd
        path = instructions.instructions_path(probe)
        current = path.read_text("utf-8", errors="replace") if path.is_file() else None
        confirmed = bool(raw.get("overwrite")) and raw.get("seen") == fingerprint(current)
        if current is not None and current != content and not confirmed:
            draft = {
                "file_name": path.name,
                "current": current,
                "diff": unified(current, content, path.name),
                "seen": fingerprint(current),
                "stale": bool(raw.get("overwrite")),
            }
            return await _page(
                request, state, values, errors, draft=draft, elsewhere=elsewhere, status_code=409
            )
        if current != content:
            try:
                instructions.write(probe, content, overwrite=current is not None)
            except AppError as exc:
                errors["instructions"] = exc.message
            except OSError as exc:
                errors["instructions"] = f"Could not write {path}: {exc.strerror or exc}"
            if errors:
                return await _page(
                    request, state, values, errors, elsewhere=elsewhere, status_code=422
                )

    profile = store.create_profile(state.engine, data=data)
    chat = store.create_session(state.engine, profile_id=profile.id, title=None)
    return RedirectResponse(f"/sessions/{chat.id}", status_code=303)


async def _page(
    request: Request,
    state: AppState,
    values: dict[str, Any],
    errors: dict[str, str] | None = None,
    *,
    draft: dict[str, Any] | None = None,
    elsewhere: dict[str, dict[str, Any]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    found, missing = await _backends(state)
    labels = WIZARD_LABELS | {f"path_{b['name']}": f"Path to {b['label']}" for b in missing}
    errors = errors or {}
    profiles = store.list_profiles(state.engine)
    report = await doctor.diagnose(
        state.settings, state.backends, profile=profiles[0] if profiles else None
    )
    facts = report.facts()
    context = base_context(request, state) | {
        "machine": {"facts": facts, "problems": [f for f in facts if f.problem]},
        "found": found,
        "missing": missing,
        "values": values,
        "errors": errors,
        "notes": {},
        "summary": summary(errors, labels),
        "elsewhere": elsewhere or {},
        "draft": draft,
        "instruction_files": sorted({b["instructions_file"] for b in found}) or ["CLAUDE.md"],
        "permission_modes": list(PERMISSION_MODES),
        "mode_help": MODE_HELP,
        "bypass_word": BYPASS_WORD,
        # For profiles.js: while the text is untouched it follows the folder typed.
        "instructions_template": _template(values["backend"], "/" + PROJECT_SLOT),
    }
    return state.templates.TemplateResponse(
        request, "welcome.html", context, status_code=status_code
    )


async def _backends(state: AppState) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(found, missing): backends on PATH (or by a profile's command), and the ones with
    an install hint to show."""
    profiles = store.list_profiles(state.engine)
    return firstrun.split_backends(await state.backends.describe_all(profiles))


async def _check(typed: str) -> dict[str, Any]:
    try:
        checked = await check_executable(typed)
    except ExecutableRefused as exc:
        return {"ok": False, "message": exc.message}
    return {"ok": True, "path": checked.path, "version": checked.version}


def _template(backend: str, cwd: str) -> str:
    if backend not in available_backends():
        backend = "claude"
    return instructions.template_for(Profile(name="", backend=backend, cwd=cwd or "/"))


def _not_found(backend: str) -> str:
    cls = available_backends().get(backend)
    if cls is None or not cls.executable:
        return "Pick one of the agents found on this machine."
    return (
        f"{cls.label} was not found on this machine's PATH; install it "
        f'({cls.install_hint}), or give its path under "I have it elsewhere".'
    )
