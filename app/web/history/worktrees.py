"""The worktrees page: every session worktree on disk, its state and size, and clean-up."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.services.sessions import hygiene
from app.web.context import base_context
from app.web.deps import StateDep

router = APIRouter(include_in_schema=False)

STATE_LABELS = {
    "merged": "merged",
    "unmerged": "unmerged",
    "dirty": "uncommitted changes",
    "orphaned": "orphaned (its session was deleted)",
    "stray": "stray (git no longer knows it)",
}


@router.get("/worktrees", response_class=HTMLResponse)
async def worktrees_page(request: Request, state: StateDep) -> HTMLResponse:
    data_dir = state.settings.data_dir
    listed = await asyncio.to_thread(hygiene.listing, state.engine, data_dir)
    context = base_context(request, state) | {
        "active_nav": "worktrees",
        "root": data_dir / "worktrees",
        "worktrees": listed,
        "labels": STATE_LABELS,
        "total_bytes": sum(w.state.size_bytes for w in listed),
        "removable": [w for w in listed if w.removable],
        "losing": [w for w in listed if w.removable and w.loses_work],
    }
    return state.templates.TemplateResponse(request, "worktrees.html", context)


@router.post("/worktrees/clean-up")
async def clean_up(state: StateDep) -> RedirectResponse:
    data_dir, manager = state.settings.data_dir, state.manager
    listed = await asyncio.to_thread(hygiene.listing, state.engine, data_dir)
    sessions = [w.session_id for w in listed if w.removable and w.session_id]
    busy = {sid for sid in sessions if manager.busy(sid)}
    for sid in sessions:
        if sid not in busy:
            # An idle agent still works in the folder that is about to go.
            await manager.stop_brain(sid)
    done = await asyncio.to_thread(hygiene.clean_up, state.engine, state.events, data_dir, busy)
    outcome = {"removed": str(len(done.removed))}
    if done.failed:
        outcome["failed"] = "; ".join(f"{p.name}: {why}" for p, why in done.failed)[:1000]
    return RedirectResponse(f"/worktrees?{urlencode(outcome)}", status_code=303)
