"""Pages for profiles and backends: the list, the form, one profile with its rules and
instructions file, the backends this machine has, and the folder picker's listing.

Every page is a plain form or link; a little JS (static/profiles.js) only hides what the
chosen backend cannot enforce and fills in the folder picked, and the server checks
everything again.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.brains import Capability, available_backends, get_brain_class
from app.brains.base import PERMISSION_MODES
from app.db.models import Profile
from app.errors import AppError, ConflictError
from app.schemas import ProfileUpdate, RuleIn
from app.services.permissions import rulebook
from app.services.profiles import firstrun, instructions
from app.services.store import store
from app.web.context import base_context
from app.web.deps import AppState, StateDep
from app.web.profiles import welcome as pages_welcome
from app.web.profiles.files import fingerprint, unified
from app.web.profiles.folder_guard import guarded_listing
from app.web.profiles.form import (
    BYPASS_WORD,
    FIELD_LABELS,
    GATES,
    MASK,
    MODE_HELP,
    ProfileForm,
    backend_choices,
    mask_mcp,
    new_values,
    read_form,
    summary,
    values_from_profile,
)

router = APIRouter(include_in_schema=False)
router.include_router(pages_welcome.router)

CAPABILITY_LABELS = {
    Capability.DENY_SINGLE_TOOL: "Refuse a single tool",
    Capability.PER_SESSION_MCP: "MCP servers per session",
    Capability.PERMISSION_PROMPTS: "Ask before running a tool",
    Capability.RESUME: "Resume a session by id",
    Capability.SET_MODE_MID_SESSION: "Switch permission mode mid-session",
    Capability.INTERRUPT: "Interrupt a turn",
    Capability.FORK: "Fork a session",
}


# -- backends ----------------------------------------------------------------------------


@router.get("/backends", response_class=HTMLResponse)
async def backends_page(request: Request, state: StateDep) -> HTMLResponse:
    classes = available_backends()
    rows = []
    for info in await state.backends.describe_all(store.list_profiles(state.engine)):
        cls = classes[info["name"]]
        limits = getattr(cls, "limits", {})
        rows.append(
            info
            | {
                "quirks": getattr(cls, "quirks", ""),
                "caps": [
                    {"label": label, "has": cap in cls.capabilities, "why": limits.get(cap, "")}
                    for cap, label in CAPABILITY_LABELS.items()
                ],
            }
        )
    rows.sort(
        key=lambda r: (
            not r["found"],
            r["name"] != "claude",
            not r["executable"],
            r["label"].casefold(),
        )
    )
    context = base_context(request, state) | {"active_nav": "backends", "backends": rows}
    return state.templates.TemplateResponse(request, "backends.html", context)


# -- the list ------------------------------------------------------------------------------


@router.get("/profiles", response_class=HTMLResponse)
async def profiles_page(request: Request, state: StateDep) -> HTMLResponse:
    return _list_page(request, state)


def _list_page(
    request: Request, state: AppState, *, error: str | None = None, status_code: int = 200
) -> HTMLResponse:
    rows = [
        {
            "id": p.id,
            "name": p.name,
            "backend": p.backend,
            "model": p.model,
            "cwd": p.cwd,
            "permission_mode": p.permission_mode,
            "rules": len(rulebook.list_rules(state.engine, p.id)),
        }
        for p in store.list_profiles(state.engine)
    ]
    context = base_context(request, state) | {
        "active_nav": "profiles",
        "rows": rows,
        "error": error,
    }
    return state.templates.TemplateResponse(
        request, "profiles.html", context, status_code=status_code
    )


@router.post("/profiles/{profile_id}/delete", response_model=None)
async def delete_profile(profile_id: str, request: Request, state: StateDep) -> Response:
    try:
        store.delete_profile(state.engine, profile_id)
    except ConflictError as exc:
        return _list_page(request, state, error=exc.message, status_code=exc.status)
    return RedirectResponse("/profiles", status_code=303)


# -- the form ------------------------------------------------------------------------------


@router.get("/profiles/new", response_class=HTMLResponse)
async def new_profile(
    request: Request,
    state: StateDep,
    copy_from: Annotated[str, Query(alias="from")] = "",
) -> HTMLResponse:
    """The empty form, or with ``?from=<id>`` a copy of that profile (a duplicate)."""
    if copy_from:
        source = store.get_profile(state.engine, copy_from)
        values = values_from_profile(source) | {"name": f"{source.name} (copy)"}
        return await _form_page(request, state, ProfileForm(values), copy_from=source.id)
    backend = firstrun.suggested_backend(await state.backends.detected())
    return await _form_page(request, state, ProfileForm(new_values(backend)))


@router.post("/profiles/new", response_model=None)
async def create_profile(request: Request, state: StateDep) -> Response:
    raw = await _form_fields(request)
    copy_from = raw.get("copy_from", "")
    source = _find_profile(state, copy_from)
    data, form = read_form(raw, secrets=source)
    if data is None:
        return await _form_page(request, state, form, copy_from=copy_from, status_code=422)
    profile = store.create_profile(state.engine, data=data)
    return RedirectResponse(f"/profiles/{profile.id}", status_code=303)


@router.get("/profiles/{profile_id}/edit", response_class=HTMLResponse)
async def edit_profile(profile_id: str, request: Request, state: StateDep) -> HTMLResponse:
    profile = store.get_profile(state.engine, profile_id)
    sessions, _ = store.list_sessions(state.engine, profile_id=profile_id, limit=1000)
    running = sum(state.manager.is_live(s.id) for s in sessions)
    form = ProfileForm(values_from_profile(profile))
    return await _form_page(request, state, form, profile, running=running)


@router.post("/profiles/{profile_id}/edit", response_model=None)
async def update_profile(profile_id: str, request: Request, state: StateDep) -> Response:
    profile = store.get_profile(state.engine, profile_id)
    raw = await _form_fields(request)
    data, form = read_form(
        raw, secrets=profile, backend=profile.backend, stored_mode=profile.permission_mode
    )
    if data is None:
        return await _form_page(request, state, form, profile, status_code=422)
    changes = ProfileUpdate.model_validate(data.model_dump(exclude={"backend"}))
    store.update_profile(state.engine, profile_id=profile.id, data=changes)
    return RedirectResponse(f"/profiles/{profile.id}", status_code=303)


async def _form_page(
    request: Request,
    state: AppState,
    form: ProfileForm,
    editing: Profile | None = None,
    *,
    copy_from: str = "",
    running: int = 0,
    status_code: int = 200,
) -> HTMLResponse:
    choices = backend_choices()
    detected = set(await state.backends.detected())
    caps: list[str] = next((b["caps"] for b in choices if b["name"] == form.values["backend"]), [])
    # An edit cannot change the backend, so a field it cannot use is left out unless
    # it holds something (then its error says to clear it).
    hidden = (
        {f for f, need in GATES.items() if need not in caps and not form.values[f].strip()}
        if editing is not None
        else set()
    )
    context = base_context(request, state) | {
        "active_nav": "profiles",
        "editing": {"id": editing.id, "name": editing.name} if editing else None,
        "copy_from": copy_from,
        "running_sessions": running,
        "values": form.values,
        "errors": form.errors,
        "notes": form.notes,
        "summary": summary(form.errors, FIELD_LABELS),
        "backends": [b | {"found": b["name"] in detected} for b in choices],
        "backend_map": {b["name"]: {"caps": b["caps"], "modes": b["modes"]} for b in choices},
        "hidden_fields": hidden,
        "permission_modes": list(PERMISSION_MODES),
        "mode_help": MODE_HELP,
        "mask": MASK,
        "bypass_word": BYPASS_WORD,
    }
    return state.templates.TemplateResponse(
        request, "profile_form.html", context, status_code=status_code
    )


async def _form_fields(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def _find_profile(state: AppState, profile_id: str) -> Profile | None:
    if not profile_id:
        return None
    try:
        return store.get_profile(state.engine, profile_id)
    except AppError:
        return None


# -- one profile: settings, rules, instructions ------------------------------------------------


@router.get("/profiles/{profile_id}", response_class=HTMLResponse)
async def profile_page(profile_id: str, request: Request, state: StateDep) -> HTMLResponse:
    return await _profile_page(request, state, profile_id)


@router.post("/profiles/{profile_id}/rules", response_model=None)
async def add_rule(
    profile_id: str,
    request: Request,
    state: StateDep,
    rule: Annotated[str, Form()] = "",
    decision: Annotated[str, Form()] = "allow",
) -> Response:
    form = {"rule": rule, "decision": decision}
    store.get_profile(state.engine, profile_id)
    try:
        body = RuleIn.model_validate(form)
    except ValidationError as exc:
        errors = {
            str((err.get("loc") or ("form",))[0]): str(err.get("msg", "invalid")).removeprefix(
                "Value error, "
            )
            for err in reversed(exc.errors())
        }
        return await _profile_page(
            request, state, profile_id, errors=errors, form=form, status_code=422
        )
    rulebook.add_rule(state.engine, profile_id=profile_id, rule=body.rule, decision=body.decision)
    return RedirectResponse(f"/profiles/{profile_id}#rules", status_code=303)


@router.post("/profiles/{profile_id}/rules/{rule_id}", response_model=None)
async def edit_rule(
    profile_id: str,
    rule_id: str,
    request: Request,
    state: StateDep,
    rule: Annotated[str, Form()] = "",
    decision: Annotated[str, Form()] = "allow",
) -> Response:
    try:
        body = RuleIn.model_validate({"rule": rule, "decision": decision})
    except ValidationError as exc:
        message = str(exc.errors()[0].get("msg", "invalid")).removeprefix("Value error, ")
        return await _profile_page(
            request, state, profile_id, errors={"rule": message}, status_code=422
        )
    rulebook.update_rule(
        state.engine, profile_id=profile_id, rule_id=rule_id, rule=body.rule, decision=body.decision
    )
    return RedirectResponse(f"/profiles/{profile_id}#rules", status_code=303)


@router.post("/profiles/{profile_id}/rules/{rule_id}/delete", response_model=None)
async def delete_rule(profile_id: str, rule_id: str, state: StateDep) -> Response:
    rulebook.delete_rule(state.engine, profile_id=profile_id, rule_id=rule_id)
    return RedirectResponse(f"/profiles/{profile_id}#rules", status_code=303)


@router.post("/profiles/{profile_id}/instructions", response_model=None)
async def write_instructions(
    profile_id: str,
    request: Request,
    state: StateDep,
    content: Annotated[str, Form()] = "",
    overwrite: Annotated[str, Form()] = "",
    seen: Annotated[str, Form()] = "",
) -> Response:
    """Create the file, or overwrite it once the user has seen the diff and confirmed."""
    profile = store.get_profile(state.engine, profile_id)
    # Browsers send a textarea's line breaks as CRLF; the file gets the text as typed.
    content = content.replace("\r\n", "\n")
    try:
        info = instructions.describe(profile)
    except AppError as exc:
        return await _profile_page(request, state, profile_id, instr_error=exc.message)
    current = info["content"]
    if info["exists"] and current == content:
        return RedirectResponse(f"/profiles/{profile_id}#instructions", status_code=303)
    if info["exists"] and (not overwrite or seen != fingerprint(current)):
        draft = {
            "content": content,
            "diff": unified(current or "", content, info["file_name"]),
            "seen": fingerprint(current),
            "stale": bool(overwrite),
        }
        return await _profile_page(request, state, profile_id, draft=draft, status_code=409)
    try:
        instructions.write(profile, content, overwrite=info["exists"])
    except AppError as exc:
        return await _profile_page(
            request, state, profile_id, instr_error=exc.message, status_code=exc.status
        )
    except OSError as exc:
        message = f"Could not write {info['path']}: {exc.strerror or exc}"
        return await _profile_page(request, state, profile_id, instr_error=message, status_code=500)
    return RedirectResponse(f"/profiles/{profile_id}#instructions", status_code=303)


async def _profile_page(
    request: Request,
    state: AppState,
    profile_id: str,
    *,
    errors: dict[str, str] | None = None,
    form: dict[str, str] | None = None,
    draft: dict[str, Any] | None = None,
    instr_error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    profile = store.get_profile(state.engine, profile_id)
    rules = rulebook.list_rules(state.engine, profile_id)
    sessions, _ = store.list_sessions(state.engine, profile_id=profile_id, limit=20)
    backend: dict[str, Any] | None = None
    instr: dict[str, Any] = {"error": instr_error}
    try:
        cls = get_brain_class(profile.backend)
        # With this profile's env: its own key or provider may stand in for the user's login.
        backend = await state.backends.describe(cls, profile) | {
            "login": cls.login_note(profile.env)
        }
        instr |= instructions.describe(profile)
        instr["seen"] = fingerprint(instr["content"])
    except AppError as exc:
        instr["error"] = instr_error or exc.message
    # Only names reach the page: environment and MCP header values are often secrets.
    shown = profile.model_dump() | {
        "env": dict.fromkeys(profile.env, MASK),
        "mcp_servers": mask_mcp(profile.mcp_servers),
    }
    context = base_context(request, state) | {
        "active_nav": "profiles",
        "profile": shown,
        "backend": backend,
        "instr": instr,
        "draft": draft,
        "rules": [r.model_dump() for r in rules],
        "profile_sessions": [{"id": s.id, "title": s.title, "status": s.status} for s in sessions],
        "permission_modes": list(PERMISSION_MODES),
        "errors": errors or {},
        "form": form or {"rule": "", "decision": "allow"},
    }
    return state.templates.TemplateResponse(
        request, "profile.html", context, status_code=status_code
    )


# -- the folder picker ---------------------------------------------------------------------


@router.get("/fs/dirs", response_class=HTMLResponse)
async def folder_listing(
    request: Request, state: StateDep, path: str = "", cwd: str = ""
) -> HTMLResponse:
    """Sub-folders of ``path`` as a fragment for the picker (no files, hidden ones last).

    ``cwd`` is the form's folder field, sent by the Browse button: a half-typed path
    starts the listing at its nearest existing parent. htmx only swaps in 2xx answers,
    so the picker gets its errors with 200; a plain request gets the real status.
    """
    listing, status = guarded_listing(path or cwd, nearest=not path)
    if request.headers.get("hx-request") == "true":
        status = 200
    context = {"request": request, "listing": listing}
    return state.templates.TemplateResponse(
        request, "_profile_dirs.html", context, status_code=status
    )
