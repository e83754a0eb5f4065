"""The Markdown export keeps HTML inert: rendered by a CommonMark renderer, nothing from a
title, a message or a tool's output becomes a tag, and code blocks still read literally."""

from __future__ import annotations

from pathlib import Path

import httpx
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

from tests.conftest import LiveServer

TITLE = "<script>alert('title')</script> Fix the login"
HOSTILE = ("script", "img", "iframe", "svg", "b", "i", "u", "style", "a", "details")


async def test_html_in_a_session_is_inert_in_its_markdown_export(
    server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    body = {"name": "<b>work</b>", "backend": "claude", "cwd": str(project_dir)}
    profile = (await client.post("/api/profiles", json=body)).json()
    r = await client.post("/api/sessions", json={"profile_id": profile["id"], "title": TITLE})
    sid = r.json()["id"]
    add = server.app.state.angelia.events.append
    add(
        sid,
        "user_message",
        {
            "text": "Look: <img src=x onerror=alert(1)>\n\n```html\n<script>bad()</script>\n```\n"
            "and `a<b` <!-- hidden -->"
        },
    )
    add(sid, "thought", {"text": "<svg onload=alert(2)>", "message_id": "m"})
    # A fence left open, and one that holds a longer run of backticks than it is made of.
    add(
        sid,
        "assistant_message",
        {
            "text": "Sure <iframe src=x></iframe>\n~~~\n```` <u>\n```\nstill code <u>x</u>",
            "message_id": "m",
        },
    )
    add(
        sid,
        "tool_call",
        {
            "tool_call_id": "t1",
            "tool": "Bash<i>",
            "input": {"command": "echo '<b>'\n````", "description": "<b>describe</b>"},
        },
    )
    breakout = "````\n</code></pre><script>alert(3)</script>\n`````"
    add(sid, "tool_result", {"tool_call_id": "t1", "output": breakout, "is_error": False})
    add(sid, "permission_request", {"permission_id": "p1", "tool": "Edit<b>", "input": {}})
    add(
        sid,
        "permission_decision",
        {
            "permission_id": "p1",
            "decision": "deny",
            "source": "user",
            "message": "<a href=x>no</a>",
        },
    )
    add(sid, "error", {"message": "<style>body{}</style> failed", "detail": "<script>d</script>"})
    add(sid, "note", {"note": "compact_summary", "text": "<details open>summary</details>"})
    add(sid, "mode_changed", {"mode": "<i>plan</i>"})
    add(sid, "turn_end", {"stop_reason": "<b>odd</b>", "is_error": True, "errors": ["<img src=y>"]})
    await server.app.state.angelia.events.flush()

    r = await client.get(f"/api/sessions/{sid}/export", params={"format": "md"})
    assert r.status_code == 200
    md = r.text
    assert md.startswith("# &lt;script>alert('title')&lt;/script> Fix the login\n")

    html = MarkdownIt("commonmark").render(md)
    page = BeautifulSoup(html, "html.parser")
    assert page.find_all(HOSTILE) == [], page.find_all(HOSTILE)
    assert "<!--" not in html
    # What was written still reads as written.
    heading = page.find("h1")
    assert heading is not None and heading.get_text() == TITLE
    text = page.get_text()
    assert "Look: <img src=x onerror=alert(1)>" in text
    assert "Profile: <b>work</b>" in text
    blocks = [c.get_text() for c in page.select("pre > code")]
    assert "<script>bad()</script>\n" in blocks
    assert "```` <u>\n```\nstill code <u>x</u>\n" in blocks
    assert "echo '<b>'\n````\n" in blocks
    assert breakout + "\n" in blocks
    assert "<script>d</script>\n" in blocks
