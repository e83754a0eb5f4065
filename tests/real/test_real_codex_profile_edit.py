"""A deny rule added to a Codex profile while its session runs in full access: the real
Codex (codex-acp 2.6.0) is restarted with it before the next message, resumes the
conversation, and refuses the command it now forbids. Fixtures: ``test_real_codex.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import count, of_kind, send, wait_for_events
from tests.real.steps import TIMEOUT
from tests.real.test_real_codex import (
    CodexProfile,
    codex_env,
    codex_profile,
    make_codex_profile,
    new_session,
    turn_of,
)
from tests.real.test_real_codex_more import fake_rules

# Fixtures shared with test_real_codex.py and test_real_codex_more.py.
__all__ = ["codex_env", "codex_profile", "fake_rules", "make_codex_profile"]

pytestmark = pytest.mark.real_cli


async def test_a_deny_rule_added_mid_session_holds_in_full_access_from_the_next_message(
    client: httpx.AsyncClient,
    make_codex_profile: CodexProfile,
    project_dir: Path,
    fake_rules: dict[str, Any],
) -> None:
    profile = await make_codex_profile(permission_mode="bypassPermissions")
    sid = await new_session(client, profile)
    (project_dir / "x").write_text("keep me")
    # In full access Codex runs a command without asking.
    await send(client, sid, "BASH: touch made")
    await wait_for_events(client, sid, count("turn_end"), timeout=TIMEOUT)
    assert (project_dir / "made").exists()
    backend_id = (await client.get(f"/api/sessions/{sid}")).json()["backend_session_id"]

    r = await client.patch(
        f"/api/profiles/{profile['id']}", json={"disallowed_tools": ["Bash(rm:*)"]}
    )
    assert r.status_code == 200, r.text
    await send(client, sid, "BASH: rm x")
    events = await wait_for_events(client, sid, count("turn_end", 2), timeout=TIMEOUT)

    assert (project_dir / "x").read_text() == "keep me"
    second = turn_of(events, 2)
    (note,) = of_kind(second, "note")
    assert note["note"] == "profile_changed", note
    said = [a["text"] for a in of_kind(second, "assistant_message")]
    assert len(said) == 1 and "rejected: Denied by the rule Bash(rm:*)" in said[0], said
    assert not of_kind(events, "permission_request")
    session = (await client.get(f"/api/sessions/{sid}")).json()
    assert session["backend_session_id"] == backend_id
