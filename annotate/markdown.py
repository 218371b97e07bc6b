"""A small, safe Markdown renderer for the project's own format docs (docs/*.md).

python-markdown is not a dependency, and the docs are only ours, so this renders the subset they
use -- headings, paragraphs, fenced code blocks, tables, lists, block quotes, and inline code,
bold, italics and links -- rather than showing the files raw: their field tables and examples
are the point, and a table in a <pre> is a wall of pipes.

Safe by construction, whatever a file holds: every piece of text is HTML-escaped as it is
emitted, no raw HTML passes through, and a link becomes an <a> only when its target is http(s),
another of the docs (``ragas.md`` → ``/docs/ragas/``), a file the docs page serves, or an anchor
on the page; any other target (``javascript:``, ``data:``, a path into the repository) is shown
as its text alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

_FENCE = re.compile(r"^\s*```")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_INLINE = re.compile(
    r"(?P<code>(`+)(?P<code_text>.+?)\2)"
    r"|(?P<link>\[(?P<link_text>[^\]]+)\]\((?P<href>[^)\s]+)\))"
    r"|(?P<strong>\*\*(?P<strong_text>.+?)\*\*)"
    r"|(?P<em>(?<![\w*])\*(?P<em_text>[^*\s](?:[^*]*?[^*\s])?)\*(?![\w*]))"
)

LinkResolver = Callable[[str], str | None]


def render(text: str, *, resolve: LinkResolver, level_shift: int = 0) -> SafeString:
    """HTML for ``text``. ``resolve(href)`` gives the URL a link may point to, or None for a
    target that must not become a link; headings move down by ``level_shift`` levels."""
    return mark_safe("\n".join(_blocks(text.splitlines(), resolve, level_shift)))


def inline(text: str, resolve: LinkResolver) -> str:
    """Escaped text with code spans, links, bold and italics."""
    out, position = [], 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[position : match.start()]))
        position = match.end()
        if match.group("code"):
            out.append(f"<code>{escape(match.group('code_text').strip())}</code>")
        elif match.group("link"):
            label = inline(match.group("link_text"), lambda href: None)
            url = resolve(match.group("href"))
            if url is None:
                out.append(label)
            else:
                external = url.startswith(("http://", "https://"))
                rel = ' rel="noopener noreferrer"' if external else ""
                out.append(f'<a href="{escape(url)}"{rel}>{label}</a>')
        elif match.group("strong"):
            out.append(f"<strong>{inline(match.group('strong_text'), resolve)}</strong>")
        else:
            out.append(f"<em>{inline(match.group('em_text'), resolve)}</em>")
    out.append(escape(text[position:]))
    return "".join(out)


def _cells(row: str) -> list[str]:
    """A table row's cells: split on | outside code spans; \\| is a literal bar."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    cells, current, in_code = [], "", False
    i = 0
    while i < len(row):
        ch = row[i]
        if ch == "\\" and i + 1 < len(row) and row[i + 1] == "|":
            current += "|"
            i += 2
            continue
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += ch
        i += 1
    cells.append(current.strip())
    return cells


def _is_table(line: str, following: str | None) -> bool:
    """A table starts with a row of cells followed by its rule (|---|---|)."""
    return (
        line.lstrip().startswith("|")
        and following is not None
        and bool(_TABLE_RULE.match(following))
    )


def _starts_block(line: str, following: str | None) -> bool:
    return bool(
        _FENCE.match(line)
        or _HEADING.match(line)
        or _BULLET.match(line)
        or _NUMBERED.match(line)
        or _QUOTE.match(line)
        or _is_table(line, following)
    )


def _blocks(lines: list[str], resolve: LinkResolver, shift: int) -> Iterator[str]:
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        following = lines[i + 1] if i + 1 < n else None
        if not line.strip():
            i += 1
        elif _FENCE.match(line):
            language = line.strip()[3:].strip()
            body = []
            i += 1
            while i < n and not _FENCE.match(lines[i]):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or the end of the file)
            label = f' data-language="{escape(language)}"' if language else ""
            yield f'<pre class="doc-code"{label}><code>{escape(chr(10).join(body))}</code></pre>'
        elif match := _HEADING.match(line):
            level = min(6, len(match.group(1)) + shift)
            title = match.group(2)
            anchor = slugify(re.sub(r"[`*]", "", title))
            yield f'<h{level} id="{anchor}">{inline(title, resolve)}</h{level}>'
            i += 1
        elif _is_table(line, following):
            head = _cells(line)
            i += 2
            rows = []
            while i < n and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            yield _table(head, rows, resolve)
        elif _BULLET.match(line) or _NUMBERED.match(line):
            ordered = bool(_NUMBERED.match(line)) and not _BULLET.match(line)
            pattern = _NUMBERED if ordered else _BULLET
            items: list[str] = []
            while i < n:
                match = pattern.match(lines[i])
                if match:
                    items.append(match.group(2))
                elif lines[i].strip() and lines[i].startswith((" ", "\t")) and items:
                    items[-1] += " " + lines[i].strip()  # a continuation of the item
                else:
                    break
                i += 1
            tag = "ol" if ordered else "ul"
            listed = "".join(f"<li>{inline(t, resolve)}</li>" for t in items)
            yield f"<{tag}>{listed}</{tag}>"
        elif _QUOTE.match(line):
            quoted = []
            while i < n and (match := _QUOTE.match(lines[i])):
                quoted.append(match.group(1))
                i += 1
            yield "<blockquote>" + "".join(_blocks(quoted, resolve, shift)) + "</blockquote>"
        else:
            paragraph = [line.strip()]
            i += 1
            while (
                i < n
                and lines[i].strip()
                and not _starts_block(lines[i], lines[i + 1] if i + 1 < n else None)
            ):
                paragraph.append(lines[i].strip())
                i += 1
            yield f"<p>{inline(' '.join(paragraph), resolve)}</p>"


def _table(head: list[str], rows: list[list[str]], resolve: LinkResolver) -> str:
    width = len(head)
    header = "".join(f'<th scope="col">{inline(cell, resolve)}</th>' for cell in head)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{inline(cell, resolve)}</td>" for cell in (row + [""] * width)[:width])
        + "</tr>"
        for row in rows
    )
    return (
        '<div class="table-wrap"><table class="table compact doc-table">'
        f"<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>"
    )
