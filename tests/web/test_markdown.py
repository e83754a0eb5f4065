"""Agent Markdown: raw HTML escaped, unsafe links and images dropped, code highlighted."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from app.web.markdown import markdown_to_html
from tests.web.test_render import HOSTILE


def test_markdown_escapes_raw_html() -> None:
    html = markdown_to_html(f'{HOSTILE}\n\n<img src=x onerror="alert(1)">\n\n<b>bold</b>')
    assert "<script" not in html
    assert "<img" not in html
    assert "<b>" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;img src=x onerror=" in html


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "data:image/png;base64,AAAA",
        "vbscript:msgbox(1)",
        "/relative/path",
        " javascript:alert(1)",
    ],
)
def test_markdown_drops_unsafe_links(link: str) -> None:
    for source in (f"[click]({link})", f"<{link}>", f"[click][r]\n\n[r]: {link}", f"![x]({link})"):
        html = markdown_to_html(source)
        assert "href" not in html, source
        assert "<img" not in html


def test_markdown_keeps_web_links_with_rel() -> None:
    html = markdown_to_html("[site](https://example.com/a) <mailto:me@example.com>")
    soup = BeautifulSoup(html, "html.parser")
    links = soup.find_all("a")
    assert [a["href"] for a in links] == ["https://example.com/a", "mailto:me@example.com"]
    for a in links:
        assert a["rel"] == ["noopener", "noreferrer", "nofollow"]


def test_markdown_images_become_links() -> None:
    html = markdown_to_html("![diagram](https://example.com/d.png)")
    assert "<img" not in html
    assert 'href="https://example.com/d.png"' in html


def test_markdown_highlights_python_fence_with_copy_button() -> None:
    html = markdown_to_html('```python\ndef f():\n    return "<b>"\n```')
    soup = BeautifulSoup(html, "html.parser")
    block = soup.select_one("div.code")
    assert block is not None
    button = block.select_one("button.copy")
    assert button is not None and button["type"] == "button"
    code = block.select_one("pre.hl code.language-python")
    assert code is not None
    assert code.select_one("span.k") is not None  # the `def` keyword
    assert "&lt;b&gt;" in html
    assert "style=" not in html


def test_markdown_unknown_language_is_plain_escaped() -> None:
    html = markdown_to_html(f"```nosuchlanguage\n{HOSTILE}\n```\n\n    indented {HOSTILE}")
    assert "<script" not in html
    assert html.count('class="copy"') == 2
    assert "<span class=" not in html.split("</button>", 1)[1].split("</pre>")[0]


def test_markdown_tables_on_linkify_off() -> None:
    html = markdown_to_html("| a | b |\n|---|---|\n| 1 | 2 |\n\nsee example.com")
    assert "<table>" in html
    assert "<a" not in html


def test_bidi_controls_are_made_visible() -> None:
    html = markdown_to_html("access \u202euser\u2066 ok")
    assert "\u202e" not in html and "\u2066" not in html
    assert "\ufffd" in html
