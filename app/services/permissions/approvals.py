"""Policy around permission requests: rules, modes, timeouts and "Allow always".

The ``PermissionService`` guarantees storage and exactly-once answers; this module
decides *who* answers: a stored rule, the session's mode, a timeout, or the user. Plan
mode answers first: a call that is not read-only is refused whatever a rule says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from sqlalchemy.engine import Engine

from app.brains.events import PermissionAsked, PermissionChoice
from app.db.models import PermissionRequest, Profile
from app.errors import ConflictError
from app.services.permissions import rulebook
from app.services.permissions.permissions import PermissionService
from app.services.permissions.readonly import PLAN_MODE, plan_mode_allows, plan_mode_denial
from app.services.permissions.rules import Rule, decide_by_rules, suggest_rule

log = logging.getLogger(__name__)


class Approvals:
    def __init__(self, engine: Engine, permissions: PermissionService) -> None:
        self._engine = engine
        self.permissions = permissions
        self._timeouts: dict[str, asyncio.Task[None]] = {}

    def on_asked(
        self, session_id: str, asked: PermissionAsked, profile: Profile, mode: str
    ) -> tuple[PermissionRequest, bool]:
        """Store the request; returns (row, answered_automatically)."""
        row = self.permissions.ask(session_id, asked, profile.cwd)
        if asked.prompt_kind != "tool":
            # A question or a plan wants the user's own answer: no rule or mode can give
            # it, so only the user (or the timeout) answers.
            self._watch_timeout(row.id, profile)
            return row, False
        if mode == PLAN_MODE and not plan_mode_allows(asked.tool, asked.tool_kind):
            # Before the rules: an allow rule ("Allow always" on a command) must not let a
            # side effect through while the plan is still only a plan.
            message = plan_mode_denial(asked.tool)
            self._spawn(self._auto(row.id, "deny", "mode", message, None))
            return row, True
        # The profile's allowed and disallowed tools are rules too, so that a backend
        # whose CLI has no such setting still keeps them when it asks.
        rules = [
            *((t, "deny") for t in profile.disallowed_tools),
            *((t, "allow") for t in profile.allowed_tools),
            *rulebook.rule_pairs(self._engine, profile.id),
        ]
        verdict = decide_by_rules(rules, asked.tool, asked.input, profile.cwd)
        if verdict is not None:
            decision, rule = verdict
            choice: PermissionChoice = "allow_once" if decision == "allow" else "deny"
            message = "" if decision == "allow" else f"Denied by the rule {rule}."
            self._spawn(self._auto(row.id, choice, "rule", message, rule))
            return row, True
        if mode == "bypassPermissions":
            self._spawn(self._auto(row.id, "allow_once", "mode", "", None))
            return row, True
        if mode == "dontAsk":
            # Claude Code's meaning, kept here for agents that have no such mode: what
            # would have asked is refused, so only what a rule allows runs.
            message = "Denied: in dontAsk mode only tools a rule allows run."
            self._spawn(self._auto(row.id, "deny", "mode", message, None))
            return row, True
        self._watch_timeout(row.id, profile)
        return row, False

    async def decide_user(
        self,
        permission_id: str,
        choice: PermissionChoice,
        message: str | None,
        profile: Profile,
        *,
        answers: dict[str, str] | None = None,
        mode: str = "",
    ) -> PermissionRequest:
        row = self.permissions.get(permission_id)
        rule: str | None = None
        if choice == "allow_always" and row.status == "pending":
            rule = suggest_rule(row.tool, row.input, profile.cwd)
            try:
                Rule.parse(rule)
            except ValueError:
                # Some commands cannot be written as a rule (unbalanced parentheses);
                # the call is then allowed once and nothing is remembered.
                rule = None
        decided = await self.permissions.decide(
            permission_id,
            choice,
            message=message,
            source="user",
            rule=rule,
            answers=answers,
            mode=mode,
        )
        if rule is not None:
            rulebook.add_rule(self._engine, profile_id=profile.id, rule=rule, decision="allow")
        self._cancel_timeout(permission_id)
        return decided

    async def cancel_pending(self, session_id: str, message: str) -> None:
        for row in self.permissions.find(status="pending", session_id=session_id):
            self._cancel_timeout(row.id)
            with contextlib.suppress(ConflictError):
                await self.permissions.decide(row.id, "cancelled", message=message, source="cancel")

    def close(self) -> None:
        for task in self._timeouts.values():
            task.cancel()
        self._timeouts.clear()

    # -- internals ---------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        task.add_done_callback(_log_failure)

    async def _auto(
        self,
        permission_id: str,
        choice: PermissionChoice,
        source: str,
        message: str,
        rule: str | None,
    ) -> None:
        with contextlib.suppress(ConflictError):
            await self.permissions.decide(
                permission_id, choice, message=message or None, source=source, rule=rule
            )

    async def _expire(self, permission_id: str, seconds: int) -> None:
        await asyncio.sleep(seconds)
        self._timeouts.pop(permission_id, None)
        minutes = (
            _plural(seconds // 60, "minute") if seconds % 60 == 0 else _plural(seconds, "second")
        )
        with contextlib.suppress(ConflictError):
            await self.permissions.decide(
                permission_id,
                "deny",
                message=f"No answer from the user within {minutes}; the tool call was denied.",
                source="timeout",
            )

    def _watch_timeout(self, permission_id: str, profile: Profile) -> None:
        if profile.permission_timeout_s > 0:
            self._timeouts[permission_id] = asyncio.create_task(
                self._expire(permission_id, profile.permission_timeout_s)
            )

    def _cancel_timeout(self, permission_id: str) -> None:
        task = self._timeouts.pop(permission_id, None)
        if task is not None:
            task.cancel()


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("automatic permission answer failed", exc_info=task.exception())
