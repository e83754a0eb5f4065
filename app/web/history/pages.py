"""Pages for reviewing past sessions: the sessions list by day, full-text search, the
session page's rename and delete, and imports.

Everything is a plain form or link, so a filtered list or a search is a bookmark.
Days are the server's local days: Angelia runs on the user's own machine, so its clock
is the user's clock.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.brains import available_backends
from app.db.models import ChatSession, Profile
from app.errors import AppError, ValidationFailed
from app.schemas import SessionUpdate
from app.services.review import export_import
from app.services.review.usage import check_day
from app.services.sessions import finish
from app.services.sessions.context import gauges
from app.services.store import search, store
from app.services.transcripts import importer, terminal
from app.services.transcripts.claude_reader import is_session_id
from app.services.transcripts.follow import find_transcript
from app.services.transcripts.importer import ClaudeImportReport
from app.web.bodylimits import load_json
from app.web.context import base_context
from app.web.deps import AppState, StateDep
from app.web.formatting import STATUS_LABELS, day_name, shown_status
from app.web.history.terminal import open_transcript
from app.web.markdown import clean_text

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
TERMINAL_MINUTES = 60
SEARCH_LIMIT = 100
QUERY_CHARS = 500
KIND_LABELS = {
    "user_message": "You",
    "assistant_message": "Agent",
    "thought": "Thinking",
    "tool_call": "Tool call",
    "tool_result": "Tool output",
}


# -- the sessions list -------------------------------------------------------------------


@router.get("/sessions", response_class=HTMLResponse)
async def sessions_page(
    request: Request,
    state: StateDep,
    profile: str = "",
    backend: str = "",
    status: str = "",
    date_from: Annotated[str, Query(alias="from")] = "",
    date_to: Annotated[str, Query(alias="to")] = "",
    cursor: str = "",
) -> HTMLResponse:
    filters = {
        "profile": profile.strip(),
        "backend": backend.strip(),
        "status": status.strip(),
        "from": date_from.strip(),
        "to": date_to.strip(),
    }
    return sessions_response(request, state, filters, cursor.strip())


def sessions_response(
    request: Request,
    state: AppState,
    filters: dict[str, str],
    cursor: str = "",
    *,
    report: ClaudeImportReport | None = None,
    import_error: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    errors: dict[str, str] = {}
    first = _parse_day(filters["from"], "from", errors)
    last = _parse_day(filters["to"], "to", errors)
    if errors:
        # The list still shows, unfiltered by the bad day; the status says it was refused.
        status_code = 422
    since = _midnight(first) if first else None
    # "To" takes in the whole of that day.
    until = _midnight(last + timedelta(days=1)) - timedelta(microseconds=1) if last else None

    def page(after: str | None) -> tuple[list[ChatSession], str | None]:
        return store.list_sessions(
            state.engine,
            limit=PAGE_SIZE,
            profile_id=filters["profile"] or None,
            backend=filters["backend"] or None,
            status=filters["status"] or None,
            since=since,
            until=until,
            cursor=after,
        )

    try:
        rows, next_cursor = page(cursor or None)
    except ValidationFailed:
        errors["cursor"] = "That page link is no longer valid; here are the newest sessions."
        cursor = ""
        rows, next_cursor = page(None)
    profiles = {p.id: p for p in store.list_profiles(state.engine)}
    pending = state.manager.permissions.pending_by_session([r.id for r in rows])
    items = [_row(r, profiles, pending, state) for r in rows]
    shown = gauges(state.engine, [r.id for r in rows])
    for item in items:
        item["context"] = shown[item["id"]].as_dict()
    active = {k: v for k, v in filters.items() if v}
    context = base_context(request, state) | {
        "active_nav": "history",
        "filters": filters,
        "errors": errors,
        "days": _by_day(items),
        "row_count": len(items),
        "first_page": not cursor,
        "older_href": "/sessions?" + urlencode({**active, "cursor": next_cursor})
        if next_cursor
        else "",
        "newest_href": "/sessions" + ("?" + urlencode(active) if active else ""),
        "profile_choices": [{"id": p.id, "name": p.name} for p in profiles.values()],
        "backend_choices": sorted(
            set(available_backends()) | {p.backend for p in profiles.values()}
        ),
        "status_choices": list(STATUS_LABELS),
        "claude_dir": str(importer.default_projects_dir(state.settings)),
        # Shown above the newest sessions only: what runs (or ran) in a terminal lately.
        "terminal": terminal.recent_sessions(
            state.engine,
            state.events,
            importer.default_projects_dir(state.settings),
            minutes=TERMINAL_MINUTES,
            own_groups=state.manager.process_groups(),
        )
        if not cursor
        else [],
        "terminal_minutes": TERMINAL_MINUTES,
        "followed": set(state.follower.following_ids()),
        "report": _report(report) if report else None,
        "import_error": import_error,
    }
    return state.templates.TemplateResponse(
        request, "sessions.html", context, status_code=status_code
    )


def _parse_day(text: str, field: str, errors: dict[str, str]) -> date | None:
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
        check_day(field, day)
    except ValueError:
        errors[field] = f"{text[:40]!r} is not a date; use YYYY-MM-DD"
        return None
    except ValidationFailed as exc:
        errors[field] = exc.message.removeprefix(f"{field}: ")
        return None
    return day


def _midnight(day: date) -> datetime:
    """The start of a local day, in UTC as the database stores times."""
    return datetime.combine(day, time.min).astimezone().astimezone(UTC)


def _local(moment: datetime) -> datetime:
    # SQLite hands times back without a zone; they were stored in UTC.
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone()


def _row(
    chat: ChatSession, profiles: dict[str, Profile], pending: dict[str, int], state: AppState
) -> dict[str, Any]:
    profile = profiles.get(chat.profile_id)
    return {
        "id": chat.id,
        "title": chat.title,
        "profile_id": chat.profile_id,
        "profile_name": profile.name if profile else "",
        "backend": chat.backend,
        "cwd": profile.cwd if profile else "",
        "created_at": chat.created_at,
        "updated_at": chat.updated_at,
        "turns": chat.turns,
        "cost_usd": chat.cost_usd,
        "status": chat.status,
        "shown": shown_status(
            chat.status, state.manager.is_live(chat.id) or state.follower.is_following(chat.id)
        ),
        "pending": pending.get(chat.id, 0),
        "day": _local(chat.updated_at).date(),
    }


def _by_day(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive rows of one day under one heading; the rows arrive newest first."""
    today = datetime.now().astimezone().date()
    days: list[dict[str, Any]] = []
    for item in items:
        if not days or days[-1]["date"] != item["day"]:
            days.append(
                {"date": item["day"], "label": day_name(item["day"], today, long=True), "rows": []}
            )
        days[-1]["rows"].append(item)
    return days


def _report(report: ClaudeImportReport) -> dict[str, Any]:
    files = report.files
    return {
        "created": report.sessions_created,
        "updated": report.sessions_updated,
        "unchanged": sum(f.status == "unchanged" for f in files),
        "skipped": sum(f.status == "skipped" for f in files),
        "malformed": report.malformed_lines,
        "events": report.events_added,
        "files": len(files),
        "problems": [f for f in files if f.status == "skipped" or f.malformed_lines],
    }


# -- imports -------------------------------------------------------------------------------

NO_FILTERS = {"profile": "", "backend": "", "status": "", "from": "", "to": ""}


@router.post("/sessions/import/claude", response_class=HTMLResponse)
async def import_claude(request: Request, state: StateDep) -> HTMLResponse:
    # The report is the answer, so the page is rendered rather than redirected to;
    # posting again is harmless because an import adds only what is new.
    path = importer.default_projects_dir(state.settings)
    try:
        report = await importer.import_claude(state.engine, state.events, path)
    except AppError as exc:
        why = exc.message
        return sessions_response(request, state, NO_FILTERS, import_error=why, status_code=422)
    return sessions_response(request, state, NO_FILTERS, report=report)


@router.post("/sessions/import/claude/{backend_session_id}", response_model=None)
async def open_terminal_session(
    request: Request, backend_session_id: str, state: StateDep
) -> HTMLResponse | RedirectResponse:
    """Import one terminal session (or what it added since) and open it here."""
    projects = importer.default_projects_dir(state.settings)
    if not is_session_id(backend_session_id):
        why = f"{backend_session_id[:80]!r} is not a Claude Code session id (a UUID)."
        return sessions_response(request, state, NO_FILTERS, import_error=why, status_code=422)
    path = find_transcript(projects, backend_session_id)
    if path is None:
        why = f"No Claude Code session {backend_session_id} under {projects}."
        return sessions_response(request, state, NO_FILTERS, import_error=why, status_code=422)
    try:
        report = await open_transcript(state, path)
    except OSError as exc:
        why = f"Cannot read {path}: {exc.strerror or exc}"
        return sessions_response(request, state, NO_FILTERS, import_error=why, status_code=422)
    if report.chat_session_id is None:
        summary = ClaudeImportReport(files=[report], lines_skipped=report.lines_skipped)
        return sessions_response(request, state, NO_FILTERS, report=summary, status_code=422)
    return RedirectResponse(f"/sessions/{report.chat_session_id}", status_code=303)


@router.post("/sessions/import/json", response_model=None)
async def import_json(
    request: Request,
    state: StateDep,
    file: Annotated[UploadFile | None, File()] = None,
) -> Response:
    raw = await file.read() if file is not None else b""
    try:
        if not raw.strip():
            raise ValidationFailed("file", "choose an exported .json file")
        document = load_json(raw, "file", export_import.parse_export)
        result = await export_import.import_json_export(state.engine, state.events, document)
    except AppError as exc:
        why = exc.message
        return sessions_response(request, state, NO_FILTERS, import_error=why, status_code=422)
    chat = result.chat
    if not result.changes:
        return RedirectResponse(f"/sessions/{chat.id}", status_code=303)
    # What was changed on the way in is said before the session is opened.
    context = base_context(request, state) | {
        "active_nav": "history",
        "session": {"id": chat.id, "title": chat.title},
        "changes": result.changes,
    }
    return state.templates.TemplateResponse(request, "import_report.html", context)


# -- search --------------------------------------------------------------------------------


@router.get("/search", response_class=HTMLResponse)
async def search_page(request: Request, state: StateDep, q: str = "") -> HTMLResponse:
    words = " ".join(q.split())[:QUERY_CHARS]
    hits = search.search(state.engine, words, limit=SEARCH_LIMIT) if words else []
    context = base_context(request, state) | {
        "active_nav": "search",
        "search_q": words,
        "hits": [_hit(h) for h in hits],
        "truncated": len(hits) >= SEARCH_LIMIT,
    }
    return state.templates.TemplateResponse(request, "search.html", context)


def _hit(hit: dict[str, Any]) -> dict[str, Any]:
    sid, seq = hit["session_id"], hit["seq"]
    return {
        "session_id": sid,
        "session_title": hit["session_title"],
        "seq": seq,
        "kind": hit["kind"],
        "kind_label": KIND_LABELS.get(hit["kind"], hit["kind"]),
        "at": _utc(hit["at"]),
        # Already escaped by the search service, with <mark> around the matches; the
        # template marks it safe, so bidi controls are made visible here.
        "snippet_html": clean_text(hit["snippet_html"]),
        # ?around= makes the page render the event even when it is far from the tail.
        "href": f"/sessions/{sid}?{urlencode({'around': seq})}#e-{seq}",
    }


def _utc(text: str) -> datetime | str:
    # The search reads times as SQLite stores them: UTC without a zone.
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# -- the session page's own actions ------------------------------------------------------


@router.post("/sessions/{session_id}/rename", response_model=None)
async def rename(session_id: str, state: StateDep, title: Annotated[str, Form()] = "") -> Response:
    store.get_session(state.engine, session_id)
    try:
        body = SessionUpdate(title=" ".join(title.split()))
    except ValidationError as exc:
        message = str(exc.errors()[0].get("msg", "invalid")).removeprefix("Value error, ")
        # Back to the page with the reason, like the mode switch: reload cannot re-post.
        query = urlencode({"rename_error": f"Title: {message}"[:300]})
        return RedirectResponse(f"/sessions/{session_id}?{query}#session-head", status_code=303)
    store.update_session(state.engine, session_id, title=body.title)
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)


@router.post("/sessions/{session_id}/delete", response_model=None)
async def delete(
    session_id: str, state: StateDep, discard: Annotated[str, Form()] = ""
) -> Response:
    # Nothing may import into the session while or after it is deleted.
    await state.follower.stop(session_id, finish=False)
    if discard == "yes":
        await finish.discard_with_session(state.engine, state.manager, state.settings, session_id)
    await state.manager.delete_session(session_id)
    return RedirectResponse("/sessions", status_code=303)
