"""What is drawn, measured in Chromium: the quiet controls (rewind, a diff line's comment
"+") keep their contrast and a 24 px target in both themes, reduced motion stops every
animation, and the search and profile pages fit a 320 px screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.api.test_review_comments import edited_session, make_repo
from tests.browser.conftest import TIMEOUT_MS, Browsing, settled
from tests.browser.demo import finished_session
from tests.browser.test_images_rewind import rewind_session
from tests.browser.test_ui import NO_SIDEWAYS_SCROLL, append
from tests.conftest import TOKEN, LiveServer

pytestmark = pytest.mark.browser

# WCAG contrast of an element as drawn: its text (or its ::before glyph) against its own
# face, and its border against what lies behind it. Colours are composited with their
# alpha and every opacity on the way up, over the backgrounds of the ancestors.
CONTRAST = """(el, pseudo) => {
  const rgba = s => {
    const m = s.match(/^rgba?\\(([^)]*)\\)$/);
    if (!m) throw new Error("unexpected colour " + s);
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = ([r, g, b, a], base) => [r, g, b].map((c, i) => c * a + base[i] * (1 - a));
  const lum = rgb => {
    const [r, g, b] = rgb.map(c => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (x, y) => {
    const [hi, lo] = [lum(x), lum(y)].sort((p, q) => q - p);
    return (hi + 0.05) / (lo + 0.05);
  };
  const chain = [];
  for (let n = el; n; n = n.parentElement) chain.unshift(n);
  let behind = matchMedia("(prefers-color-scheme: dark)").matches ? [0, 0, 0] : [255, 255, 255];
  let opacity = 1;
  for (const n of chain.slice(0, -1)) {
    const css = getComputedStyle(n);
    opacity *= Number(css.opacity);
    behind = over(rgba(css.backgroundColor), behind);
  }
  const css = getComputedStyle(el);
  opacity *= Number(css.opacity);
  const fade = ([r, g, b, a]) => [r, g, b, a * opacity];
  const face = over(fade(rgba(css.backgroundColor)), behind);
  const ink = over(fade(rgba(getComputedStyle(el, pseudo).color)), face);
  const box = el.getBoundingClientRect();
  const border = css.borderTopStyle === "none" ? 0 : parseFloat(css.borderTopWidth);
  return {
    text: ratio(ink, face),
    border: border ? ratio(over(fade(rgba(css.borderTopColor)), behind), behind) : null,
    width: box.width,
    height: box.height,
  };
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_rewind_button_is_legible_and_big_enough(
    browsing: Browsing,
    client: httpx.AsyncClient,
    project_dir: Path,
    fake_claude: dict[str, Any],
    scheme: str,
) -> None:
    page = browsing.page
    await page.emulate_media(color_scheme=scheme)
    sid = await rewind_session(client, project_dir, fake_claude, {"filesChanged": []})
    await browsing.sign_in(f"/sessions/{sid}")
    assert await page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (
        scheme == "dark"
    )
    action = page.locator(".rewind-act").first
    await expect(action).to_be_visible()
    await page.mouse.move(0, 0)  # away from the message, so no hover brightens it
    await settled(page)
    rewind = await action.evaluate(CONTRAST, None)
    assert rewind["text"] >= 4.5, rewind
    assert rewind["width"] >= 24 and rewind["height"] >= 24, rewind


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_comment_buttons_are_legible_and_big_enough(
    browsing: Browsing, project_dir: Path, fake_claude: dict[str, Any], scheme: str
) -> None:
    page = browsing.page
    await page.emulate_media(color_scheme=scheme)
    repo = make_repo(project_dir)
    async with browsing.server.client() as client:
        sid, _ = await edited_session(client, repo, fake_claude)
    await browsing.sign_in(f"/sessions/{sid}/changes?view=split")
    for view in ("split", "unified"):
        await page.goto(f"{browsing.server.url}/sessions/{sid}/changes?view={view}")
        plus = page.get_by_role("button", name="Comment on f.txt line 2", exact=True)
        await expect(plus).to_be_visible()
        await page.mouse.move(0, 0)
        await settled(page)
        found = await plus.evaluate(CONTRAST, "::before")
        assert found["text"] >= 3 and found["border"] >= 3, (view, found)
        assert found["width"] >= 24 and found["height"] >= 24, (view, found)
        # The diff's lines are as tall as the buttons: neighbours' targets never overlap.
        overlaps = await page.locator(".review-add").evaluate_all(
            """bs => {
              const boxes = bs.map(b => b.getBoundingClientRect());
              const out = [];
              boxes.forEach((p, i) => boxes.slice(i + 1).forEach(q => {
                const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
                const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
                if (w > 0.5 && h > 0.5) out.push([p.top, q.top]);
              }));
              return [boxes.length, out];
            }"""
        )
        assert overlaps[0] > 5 and overlaps[1] == [], (view, overlaps)


async def test_reduced_motion_stops_every_animation(
    browser: Browser, server: LiveServer, client: httpx.AsyncClient, project_dir: Path
) -> None:
    sid = await finished_session(server, client, project_dir)
    context = await browser.new_context(reduced_motion="reduce")
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(f"{server.url}/sessions/{sid}?token={TOKEN}")
        await expect(page.locator(".turn-end")).to_have_count(1)
        append(server, sid, "user_message", {"text": "go on"})
        append(server, sid, "text_delta", {"text": "Hello", "message_id": "live-1"})
        await expect(page.locator("#live-live-1 .live-text")).to_have_text("Hello")
        cursor = await page.locator("#live-live-1 .live-text").evaluate(
            "el => getComputedStyle(el, '::after').content"
        )
        assert cursor != "none", "the streaming cursor is drawn"
        moving = await page.evaluate(
            """() => {
              const seconds = s => Math.max(...s.split(",").map(parseFloat));
              const out = [];
              for (const el of document.querySelectorAll("*")) {
                for (const pseudo of [null, "::before", "::after", "::marker"]) {
                  const css = getComputedStyle(el, pseudo);
                  const name = el.tagName + (el.id ? "#" + el.id : "") + "." +
                    [...el.classList].join(".") + (pseudo || "");
                  if (css.animationName !== "none" && seconds(css.animationDuration) > 0.001) {
                    out.push(name + " animation " + css.animationName);
                  }
                  if (seconds(css.transitionDuration) > 0.001) out.push(name + " transition");
                }
              }
              return out;
            }"""
        )
        assert moving == []
    finally:
        await context.close()


@pytest.mark.parametrize("shown", ["search", "results", "profile"])
async def test_search_and_profile_pages_fit_320_px(
    browser: Browser,
    server: LiveServer,
    client: httpx.AsyncClient,
    project_dir: Path,
    shown: str,
) -> None:
    sid = await finished_session(server, client, project_dir)
    profile = (await client.get(f"/api/sessions/{sid}")).json()["profile_id"]
    # Permission rules are a table of four columns with a form in each row.
    for rule in ("Bash(npm run test:integration:*)", "Edit(src/components/**)"):
        added = await client.post(
            f"/api/profiles/{profile}/rules", json={"rule": rule, "decision": "allow"}
        )
        assert added.status_code == 201, added.text
    # A hit whose snippet holds a long path, which has no spaces to break at.
    words = "needle in /" + "/".join(f"folder_{n}" for n in range(12)) + "/file.py"
    append(server, sid, "assistant_message", {"text": words, "message_id": "m-needle"})
    path = {"search": "/search", "results": "/search?q=needle", "profile": f"/profiles/{profile}"}
    context = await browser.new_context(viewport={"width": 320, "height": 640})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    try:
        sep = "&" if "?" in path[shown] else "?"
        await page.goto(f"{server.url}{path[shown]}{sep}token={TOKEN}")
        await expect(page.locator("main h1")).to_be_visible()
        for scheme in ("light", "dark"):
            await page.emulate_media(color_scheme=scheme)
            # Opened, each rule's edit and delete forms fit too.
            await page.evaluate(
                "document.querySelectorAll('#rules details').forEach(d => d.open = true)"
            )
            wide = await page.evaluate(
                """() => [...document.querySelectorAll("main *")]
                  .filter(el => el.getBoundingClientRect().right > innerWidth + 0.5)
                  .slice(0, 5).map(el => el.outerHTML.slice(0, 120))"""
            )
            assert await page.evaluate(NO_SIDEWAYS_SCROLL), (scheme, wide)
        if shown == "results":
            await expect(page.locator(".hit").first).to_be_visible()
    finally:
        await context.close()
