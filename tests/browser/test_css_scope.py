"""No rule of one component styles another's markup.

A component here is a part of the page with its own section of static/app.css and class
names of its own (a prefix). Each selector of its section must name one of its classes,
and in Chromium, on the pages that show it next to the others, every selector naming one
of its classes (wherever it is in the sheet) matches only elements inside the component.
A bare ``.ctx`` in the context gauge's section once matched the diff's context lines and
broke the split diff's table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser.conftest import Browsing
from tests.browser.test_split_diff import open_changes
from tests.web.history.test_pages_changes import before_edits, store_edits

pytestmark = pytest.mark.browser

APP_CSS = Path(__file__).parents[2] / "static" / "app.css"


@dataclass(frozen=True)
class Component:
    heading: str  # in the comment that opens its section of app.css
    root: str  # the elements that are the component
    prefixes: tuple[str, ...]  # its class names are these, or start with them and - or _

    def owns(self, cls: str) -> bool:
        return any(cls == p or cls.startswith((p + "-", p + "_")) for p in self.prefixes)


COMPONENTS = (
    Component(
        "context gauge and Compact",
        "[data-gauge-of], form[action$='/compact']",
        ("ctx-gauge", "compact-form"),
    ),
    Component("split diff", ".split-wrap", ("split-diff", "split-wrap")),
)

HEADING = re.compile(r"^/\* -{2,} ?(.*)$", re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
PRELUDE = re.compile(r"([^{}]+)\{")
CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
# Not part of what an element is: states a test page is not in, and pseudo-elements.
STATE = re.compile(r"::?[-\w]+(?![-\w(])")


def selectors(css: str) -> list[str]:
    """Every selector of the rules in ``css``, one per comma-separated part."""
    found = []
    for prelude in PRELUDE.findall(COMMENT.sub("", css)):
        if prelude.strip().startswith("@"):
            continue
        found += [s.strip() for s in prelude.split(",") if s.strip()]
    return found


def sections() -> dict[str, str]:
    """app.css by section: the heading of each and the text up to the next heading."""
    css = APP_CSS.read_text()
    marks = list(HEADING.finditer(css))
    ends = [m.start() for m in marks[1:]] + [len(css)]
    return {m.group(1): css[m.end() : end] for m, end in zip(marks, ends, strict=True)}


def section_texts(component: Component) -> list[str]:
    return [text for heading, text in sections().items() if component.heading in heading]


def test_each_component_section_names_only_its_own_classes() -> None:
    for component in COMPONENTS:
        texts = section_texts(component)
        assert len(texts) == 1, f"one section of app.css is headed {component.heading!r}"
        stray = [
            s for s in selectors(texts[0]) if not any(component.owns(c) for c in CLASS.findall(s))
        ]
        assert stray == [], (component.heading, stray)


# Every element a selector matches that is not inside the component's root.
OUTSIDE = """([sel, root]) => [...document.querySelectorAll(sel)]
  .filter(el => !el.closest(root))
  .map(el => el.tagName.toLowerCase() + "." + [...el.classList].join("."))"""


async def test_a_component_rules_match_only_inside_it(
    browsing: Browsing, project_dir: Path
) -> None:
    before_edits(project_dir)
    sid = await open_changes(browsing, project_dir, "split")
    # A created file and a one-line edit too: diffs without context lines.
    store_edits(browsing.server, sid, project_dir)
    everywhere = selectors(APP_CSS.read_text())
    checks = {
        c: {
            *(s for t in section_texts(c) for s in selectors(t)),
            *(s for s in everywhere if any(map(c.owns, CLASS.findall(s)))),
        }
        for c in COMPONENTS
    }
    page = browsing.page
    pages = [f"/sessions/{sid}", f"/sessions/{sid}/changes?view=split"]
    pages += [f"/sessions/{sid}/changes?view=unified", "/sessions", "/board"]
    seen: set[str] = set()
    for path in pages:
        response = await page.goto(browsing.server.url + path)
        assert response is not None and response.ok, path
        for component, sels in checks.items():
            if await page.locator(component.root).count():
                seen.add(component.heading)
            for sel in sorted(sels):
                query = STATE.sub("", sel)
                outside = await page.evaluate(OUTSIDE, [query, component.root])
                assert outside == [], (path, component.heading, sel, outside)
    # Each component was on a page, next to the others.
    assert seen == {c.heading for c in COMPONENTS}, seen
