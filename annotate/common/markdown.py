"""The project's own format docs (docs/*.md) as HTML, through markdown-it-py (CommonMark, with
GitHub's tables): their field tables and examples are the point, and a table in a <pre> is a
wall of pipes.

Safe whatever a file holds: raw HTML is off, so any tag in the text is escaped like the rest;
an image shows as its description (a doc page loads nothing from elsewhere); and a link
becomes an <a> only when ``resolve`` gives it a target (http(s), another of the docs, a file
the docs page serves, an anchor on the page). Any other link (``javascript:``, ``data:``, a
path into the repository) is shown as its text alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify
from markdown_it import MarkdownIt
from markdown_it.token import Token

LinkResolver = Callable[[str], str | None]


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def fence(renderer, tokens, index, options, env):
        token = tokens[index]
        language = token.info.strip().split(" ")[0]
        label = f' data-language="{escape(language)}"' if language else ""
        # tabindex: a block wider than the page scrolls, and a keyboard can scroll it only
        # once it can take focus (WCAG 2.1.1; axe's scrollable-region-focusable).
        code = escape(token.content)
        return f'<pre class="doc-code"{label} tabindex="0"><code>{code}</code></pre>\n'

    def image(renderer, tokens, index, options, env):
        return escape(tokens[index].content)  # its description, nothing fetched

    def table_open(renderer, tokens, index, options, env):
        return '<div class="table-wrap"><table class="table compact doc-table">\n'

    def table_close(renderer, tokens, index, options, env):
        return "</table></div>\n"

    md.add_render_rule("fence", fence)
    md.add_render_rule("code_block", fence)
    md.add_render_rule("image", image)
    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    return md


_MD = _parser()


def render(text: str, *, resolve: LinkResolver, level_shift: int = 0) -> SafeString:
    """HTML for ``text``. ``resolve(href)`` gives the URL a link may point to, or None for a
    target that must not become a link; headings move down by ``level_shift`` levels."""
    tokens = _MD.parse(text)
    for index, token in enumerate(tokens):
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + level_shift)}"
            if token.type == "heading_open":
                token.attrSet("id", slugify(re.sub(r"[`*]", "", tokens[index + 1].content)))
        elif token.type == "th_open":
            token.attrSet("scope", "col")
        elif token.type == "inline" and token.children:
            _links(token.children, resolve)
    return mark_safe(_MD.renderer.render(tokens, _MD.options, {}))


def _links(children: list[Token], resolve: LinkResolver) -> None:
    """Point each link where ``resolve`` says, or drop its tags and keep its text."""
    dropped = False
    for child in children:
        if child.type == "link_open":
            url = resolve(str(child.attrGet("href") or ""))
            dropped = url is None
            if dropped:
                child.type, child.tag, child.attrs = "text", "", {}
            else:
                child.attrs = {"href": url}
                if url.startswith(("http://", "https://")):
                    child.attrSet("rel", "noopener noreferrer")
        elif child.type == "link_close" and dropped:
            child.type, child.tag, dropped = "text", "", False
