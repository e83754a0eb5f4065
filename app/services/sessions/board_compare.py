"""The same prompt in N worktrees: one session per run (a profile, maybe a model), each in
a git worktree of its own, all sent the same message, to compare what each agent makes.

Every folder is checked to be a git repository before anything is made, and a run that
fails halfway (a model the backend refuses, git refusing a worktree) takes back every
session and worktree made before it: either all N start, or none does.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from app.db.models import ChatSession
from app.services.sessions.manager import SessionManager
from app.services.sessions.workspace import (
    close_workspace,
    create_session,
    worktree_repository,
)
from app.services.store import store

__all__ = ["MAX_RUNS", "Run", "compare"]

MAX_RUNS = 8
TITLE_CHARS = 60


@dataclass(frozen=True)
class Run:
    profile_id: str
    model: str | None = None


def _title(prompt: str, label: str) -> str:
    words = " ".join(prompt.split())
    if len(words) > TITLE_CHARS:
        words = words[: TITLE_CHARS - 1] + "…"
    return f"{words} · {label}"


async def _check_folders(engine: Engine, runs: list[Run]) -> None:
    for profile_id in dict.fromkeys(r.profile_id for r in runs):
        profile = store.get_profile(engine, profile_id)
        why = f"Profile {profile.name!r} cannot run in a worktree"
        await asyncio.to_thread(worktree_repository, profile, why)


async def _take_back(
    engine: Engine, manager: SessionManager, data_dir: Path, made: list[ChatSession]
) -> None:
    for chat in made:
        profile = store.get_profile(engine, chat.profile_id)
        await manager.delete_session(chat.id)
        await asyncio.to_thread(close_workspace, chat, profile, data_dir)


async def compare(
    engine: Engine, manager: SessionManager, data_dir: Path, prompt: str, runs: list[Run]
) -> list[ChatSession]:
    """Make one worktree session per run and send each the prompt; returns them in order.

    Raises NotARepository (422) naming the profile whose folder is not a repository,
    AgentCapReached (422) when the runs would take more agents than the server runs at
    once, or whatever refused a run (a model: 422; git: 409); nothing is left made then.
    """
    await _check_folders(engine, runs)
    # Every run's place under the cap on running agents is taken first: all start or none.
    with manager.agents.hold(len(runs)) as held:
        made = await _make(engine, manager, data_dir, prompt, runs)
        for chat in made:
            await manager.send_message(chat.id, prompt, [], held=held)
    return [store.get_session(engine, chat.id) for chat in made]


async def _make(
    engine: Engine, manager: SessionManager, data_dir: Path, prompt: str, runs: list[Run]
) -> list[ChatSession]:
    made: list[ChatSession] = []
    try:
        for run in runs:
            profile = store.get_profile(engine, run.profile_id)
            label = run.model or profile.model or profile.name
            chat = await create_session(
                engine,
                data_dir,
                profile_id=run.profile_id,
                title=_title(prompt, label),
                worktree=True,
            )
            made.append(chat)
            if run.model:
                await manager.controls.set_model(chat.id, run.model)
    except BaseException:
        await _take_back(engine, manager, data_dir, made)
        raise
    return made
