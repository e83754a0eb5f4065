"""App factory: wires settings, database, services, security and routers together."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from app import __version__
from app.db.datadir import DataDirLock, tighten
from app.db.engine import open_database
from app.errors import AppError, ValidationFailed
from app.resources import static_dir, templates_dir
from app.services.access.codes import SignInCodes
from app.services.access.devices import DeviceSessions
from app.services.access.pairing import Pairings
from app.services.access.signins import SignIns
from app.services.profiles.backends import BackendDetector
from app.services.sessions.lifecycle import Stopper
from app.services.sessions.manager import SessionManager
from app.services.sessions.schedule import ContinueScheduler
from app.services.store.eventlog import EventLog
from app.services.transcripts.follow import Follower
from app.settings import Settings
from app.web import docs, sidebar
from app.web.access import devices as pages_devices
from app.web.access import push as access_push
from app.web.access import signins as pages_signins
from app.web.access.guard import SecurityMiddleware
from app.web.board import api as api_board
from app.web.board import pages as pages_board
from app.web.bodylimits import JsonBodyLimits
from app.web.chat import api, api_events, pages
from app.web.chat import context as pages_context
from app.web.chat import decisions as pages_decisions
from app.web.chat import files as api_files
from app.web.chat import live as chat_live
from app.web.chat import schedule as pages_schedule
from app.web.chat import steer as api_steer
from app.web.deps import AppState, refuse_nul
from app.web.durability import DurableWrites
from app.web.history import api as api_history
from app.web.history import changes as pages_changes
from app.web.history import comments as pages_comments
from app.web.history import finish as finish_work
from app.web.history import pages as pages_history
from app.web.history import review as pages_review
from app.web.history import terminal as pages_terminal
from app.web.history import worktrees as pages_worktrees
from app.web.profiles import api as api_profiles
from app.web.profiles import pages as pages_profiles
from app.web.render import make_templates
from app.web.security import (
    SECURITY_HEADERS,
    csrf_token_for,
    link_key_for,
    load_or_create_token,
)
from app.web.static import CheckedStaticFiles
from app.web.usage import api as api_usage
from app.web.usage import pages as pages_usage

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app. The database is opened and migrated right here, so a bad
    data dir fails before the server binds its port, with a readable message."""
    settings = settings or Settings()
    # Before anything reads the database: a second server on this data dir stops here,
    # without recovering (killing) the running one's agents.
    lock = DataDirLock.acquire(settings.data_dir, settings.public_url)
    try:
        tightened = tighten(settings.data_dir)
        if tightened:
            log.warning(
                "Made %d item(s) in %s private to you (they were readable by other users): %s",
                len(tightened),
                settings.data_dir,
                ", ".join(tightened[:5]) + (" …" if len(tightened) > 5 else ""),
            )
        engine = open_database(settings.data_dir)
        token = load_or_create_token(settings)
        events = EventLog(engine)
        manager = SessionManager(engine, events, settings)
        manager.recover()
    except BaseException:
        lock.release()
        raise
    templates = make_templates(templates_dir())
    templates.env.globals["reconnect_give_up_s"] = settings.reconnect_give_up_s
    templates.env.globals["link_key"] = link_key_for(token)
    follower = Follower(engine, events, own_groups=manager.process_groups)
    stopper = Stopper(events, manager, settings.shutdown_grace_s, follower)
    continues = ContinueScheduler(engine, events, manager)
    state = AppState(
        settings=settings,
        engine=engine,
        events=events,
        manager=manager,
        templates=templates,
        token=token,
        backends=BackendDetector(),
        stopper=stopper,
        follower=follower,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        manager.start_background()
        notifier.start()
        continues.start()
        # The ACP SDK takes ~0.35 s to import; ACP brains load it lazily (so `angelia
        # doctor` stays fast), and importing it here, in a thread, keeps that off the
        # event loop when the first ACP session starts.
        asyncio.get_running_loop().run_in_executor(None, importlib.import_module, "acp")
        try:
            yield
        finally:
            await continues.stop()
            await notifier.stop()
            await stopper.wait()
            engine.dispose()
            lock.release()

    # FastAPI's own /docs and /redoc load a CDN and an inline script; ours are vendored.
    app = FastAPI(
        title="Angelia",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(refuse_nul)],
    )
    app.state.angelia = state
    app.state.data_dir_lock = lock
    app.state.signins = signins = SignIns(engine, token)
    app.state.signin_codes = codes = SignInCodes()
    app.state.devices = devices = DeviceSessions(engine)
    app.state.pairings = Pairings()
    app.mount("/static", CheckedStaticFiles(directory=static_dir()), name="static")
    app.include_router(api.router)
    app.include_router(api_events.router)
    app.include_router(api_steer.router)
    app.include_router(api_files.router)
    app.include_router(docs.router)
    app.include_router(api_history.router)
    app.include_router(api_usage.router)
    app.include_router(api_board.router)
    app.include_router(api_profiles.router)
    app.include_router(pages.router)
    app.include_router(chat_live.router)
    app.include_router(pages_changes.router)
    pages_comments.install(app)
    pages_context.install(app)
    pages_schedule.install(app, continues)
    notifier = access_push.install(app, state)
    continues.on_failed = notifier.continue_failed
    app.include_router(finish_work.router)
    app.include_router(finish_work.pages)
    app.include_router(pages_worktrees.router)
    app.include_router(pages_terminal.router)
    app.include_router(pages_decisions.router)
    app.include_router(pages_review.router)
    app.include_router(pages_profiles.router)
    app.include_router(pages_history.router)
    app.include_router(pages_usage.router)
    app.include_router(pages_signins.router)
    app.include_router(pages_devices.router)
    app.include_router(sidebar.router)
    app.include_router(pages_board.router)
    app.add_middleware(DurableWrites, events=events)
    app.add_middleware(JsonBodyLimits)
    app.add_middleware(
        SecurityMiddleware,
        settings=settings,
        token=token,
        signins=signins,
        codes=codes,
        pages=templates.env,
        devices=devices,
    )

    @app.exception_handler(AppError)
    async def _app_error(request: Request, exc: AppError) -> Response:
        if request.url.path.startswith("/api/"):
            if isinstance(exc, ValidationFailed):
                # The same shape as request-validation errors, so clients parse one format.
                field = {"field": exc.field, "message": exc.message.removeprefix(f"{exc.field}: ")}
                return JSONResponse({"detail": [field]}, status_code=422)
            return JSONResponse({"detail": exc.message}, status_code=exc.status)
        context = {
            "request": request,
            "csrf_token": csrf_token_for(token),
            "status": exc.status,
            "message": exc.message,
            "detail": exc.detail,
        }
        page: Response = templates.TemplateResponse(
            request, "error.html", context, status_code=exc.status
        )
        return page

    @app.exception_handler(Exception)
    async def _crashed(request: Request, exc: Exception) -> Response:
        # Starlette answers this from its outermost layer, outside SecurityMiddleware,
        # so the headers every other response gets are added here.
        headers = {k.decode(): v.decode() for k, v in SECURITY_HEADERS}
        message = "Internal error: the server hit a bug and logged it. Nothing was lost."
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=500, headers=headers)
        return PlainTextResponse(message, status_code=500, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [
            {
                "field": ".".join(str(p) for p in e.get("loc", ()) if p != "body"),
                "message": str(e.get("msg", "")).removeprefix("Value error, "),
                "loc": list(e.get("loc", ())),
                "type": e.get("type"),
            }
            for e in exc.errors()
        ]
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": errors}, status_code=422)
        text = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return HTMLResponse(text, status_code=422)

    return app
