"""Agent Markdown as safe HTML, with highlighted code blocks.

Agent output is untrusted: it may quote web pages, files or prompt-injected text.
``markdown_to_html`` never passes raw HTML through, keeps only http(s)/mailto links and
turns images into plain links, and ``clean_text`` makes bidi control characters visible
(the Jinja environment applies it to every other output too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup
from pygments import highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

# Overrides (U+202A–U+202E) and isolates (U+2066–U+2069) can make text display in a
# different order from the one it runs in ("Trojan Source"). They are shown as U+FFFD
# instead of being dropped silently, so the reader sees that something was there.
_BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_TABLE = {ord(ch): "\ufffd" for ch in _BIDI_CONTROLS}

_SAFE_LINK = re.compile(r"^(?:https?://|mailto:)", re.IGNORECASE)
_LANG_CHARS = re.compile(r"[^A-Za-z0-9_+#.-]")
_LINK_REL = "noopener noreferrer nofollow"
# Highlighting is a nicety; beyond this size a block is shown as plain text so one huge
# paste cannot stall a page render.
_MAX_HIGHLIGHT_CHARS = 200_000

_FORMATTER = HtmlFormatter(nowrap=True)


def clean_text(text: str) -> str:
    """Make bidi control characters visible."""
    return text.translate(_BIDI_TABLE)


def is_safe_href(url: str) -> bool:
    """Only absolute http(s) and mailto links survive; everything else stays text."""
    return bool(_SAFE_LINK.match(url.strip()))


def highlight_code(code: str, lang: str) -> str:
    """HTML for a code block body: Pygments token spans, or escaped text."""
    if lang and len(code) <= _MAX_HIGHLIGHT_CHARS:
        try:
            lexer = get_lexer_by_name(lang)
        except ClassNotFound:
            lexer = None
        if lexer is not None:
            return str(highlight(code, lexer, _FORMATTER))
    return escapeHtml(code)


def _code_html(code: str, lang: str) -> str:
    lang = _LANG_CHARS.sub("", lang)[:40]
    label = f'<span class="code-lang">{escapeHtml(lang)}</span>' if lang else "<span></span>"
    code_class = f' class="language-{escapeHtml(lang)}"' if lang else ""
    return (
        '<div class="code">'
        f'<div class="code-bar">{label}'
        '<button type="button" class="copy" aria-label="Copy code">Copy</button></div>'
        f'<pre class="hl" tabindex="0"><code{code_class}>{highlight_code(code, lang)}</code></pre>'
        "</div>\n"
    )


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    info = token.info.strip()
    lang = info.split(maxsplit=1)[0] if info else ""
    return _code_html(token.content, lang)


def _render_code_block(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return _code_html(tokens[idx].content, "")


def _render_link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    href = token.attrGet("href")
    # validateLink already refused unsafe targets; checking again here means a future
    # parser rule that forgets to call it still cannot produce a script link.
    if not isinstance(href, str) or not is_safe_href(href):
        token.attrs.pop("href", None)
    else:
        token.attrSet("rel", _LINK_REL)
        token.attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # Remote images would be fetched the moment a transcript is opened, telling a third
    # party when it was read; they become plain links instead.
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src")
    if not isinstance(src, str) or not is_safe_href(src):
        return escapeHtml(alt)
    return (
        f'<a class="img-link" href="{escapeHtml(src)}" rel="{_LINK_REL}" target="_blank">'
        f"Image: {escapeHtml(alt)}</a>"
    )


# Agent text sits under the page's h1 and the message's own h2 (templates/events/), so its
# headings start at h3: "# Title" must not read as a second title of the page.
_HEADING_SHIFT = 2


def _render_heading(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    level = int(token.tag[1:])
    if token.nesting == 1:
        # The class keeps the size the author's level asked for.
        token.attrSet("class", f"md-h{level}")
    token.tag = f"h{min(level + _HEADING_SHIFT, 6)}"
    return self.renderToken(tokens, idx, options, env)


class _SafeMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_href(url)


def _make_markdown() -> MarkdownIt:
    md = _SafeMarkdown("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_code_block)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("heading_open", _render_heading)
    md.add_render_rule("heading_close", _render_heading)
    return md


_MD = _make_markdown()


def markdown_to_html(text: str) -> Markup:
    """Sanitized HTML for agent Markdown: raw HTML is escaped, never rendered."""
    return Markup(_MD.render(clean_text(text)))
