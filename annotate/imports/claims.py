"""Sentence-level claim proposals for answers that arrive without ``claims``.

When a bundle's answer has no ``claims``, the app proposes one claim per sentence and a lead
reviews the boundaries before labelling opens (SPEC, "Vocabulary and data contract"). This
module is pure (stdlib only, no Django) so that the importer, the lead's boundary editor and
the tests can all share it.

Rules, in short:

* ``start``/``end`` are character offsets into the answer (``end`` exclusive), trimmed of
  whitespace. A span covers the sentence's own citation markers, including markers that stand
  after its final punctuation (``... penalty. [notes-17]``). Bullet markers (``-``, ``*``,
  ``1.``, ``a)`` ...) and heading hashes are never inside a span.
* A citation marker is ``[id]``, ``[id1, id2]`` or ``[id1; id2]`` (optionally wrapped in
  parentheses, ``([id])``), where an id has no whitespace, is made of letters, digits and
  ``- _ : . /`` and holds at least one letter or digit. ``[]``, ``[...]``, ``[1/2 of the
  grade]`` and markdown links ``[text](url)`` are prose, not markers.
* ``text`` is the sentence with its markers removed and whitespace collapsed; ``citations``
  are the marker ids in order of first appearance.
* A sentence made only of markers is not a claim: its citations go to the previous claim (or,
  at the very start of the answer, to the next one).
* Sentences end at ``.``, ``!``, ``?``, ``…`` (and runs such as ``...`` or ``?!``) followed,
  after optional closing quotes/brackets and markers, by whitespace and a next sentence that
  does not start with a lowercase word; a name such as ``iPhone``, ``eBay``, ``macOS`` or
  ``v3.1`` (a capital or digit after its first lowercase letters) may start one. A period
  does not end a sentence when it closes

  - nothing: the dot inside a decimal, version, time, address or file name (``0.001``,
    ``v2.1``, ``10.30``, ``example.org``, ``report.pdf``) has no whitespace after it. At the
    end of a sentence the same tokens end it like words (``at 09:30.``, ``Python 3.11.``);
  - the item number of an inline enumeration: up to three digits standing alone after a
    colon with the next item ahead (``Steps: 1. Submit. 2. Wait.``), or opening a sentence
    (that ``2.``). A number glued to what precedes it (``09:30.``, ``3:1.``, ``2-1.``) is
    none, nor is ``Marks: 40.``, which no ``41.`` follows;
  - an abbreviation that never ends a sentence (``e.g.``, ``Dr.``, ``vs.``, ``Sen.``,
    ``Mt.`` ...);
  - a numbering abbreviation (``Fig.``, ``p.``, ``pp.``, ``Sec.``, ``s.``, ``No.`` ...) or an
    abbreviated month or weekday (``Jan. 6``, ``Sept. 2023``, ``Thu. 14:00``) before a number;
  - ``a.m.`` or ``p.m.`` before a day, a month or a time zone (``6 a.m. Tuesday``,
    ``9 a.m. ET``, ``8:40 a.m. Nepal time``);
  - an initial (``J. Smith``, ``U.S.``) or ``et al.``, unless a common sentence-opening word
    (``The``, ``It``, ``We`` ...) follows. A capital after a degree sign or a labelling word
    is no initial (``42 °C.``, ``Group B.``, ``vitamin D.``).
* A blank line, a bullet line or a heading always starts a new sentence. A single newline
  also does, unless the text is evidently wrapped: the next line starts with a lowercase
  word or a citation marker, or the line ends with ``, ; ( - – — & / +`` or an abbreviation
  that cannot end a sentence, or a word line is continued by a number.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["ProposedClaim", "marker_free", "propose_claims", "strip_markers"]


@dataclass(frozen=True)
class ProposedClaim:
    text: str
    start: int
    end: int
    citations: tuple[str, ...]


# --- citation markers -------------------------------------------------------------------------

# An id: no whitespace, letters/digits and - _ : . /, at least one letter or digit.
_ID = r"(?=[\w\-:./]*[^\W_])[\w\-:./]{1,200}"
_GROUP = rf"\[[ \t]*{_ID}(?:[ \t]*[,;][ \t]*{_ID})*[ \t]*\](?!\()"
_MARKER_RE = re.compile(rf"{_GROUP}|\([ \t]*{_GROUP}(?:[ \t]*[,;]?[ \t]*{_GROUP})*[ \t]*\)")
_MARKER_WITH_SPACE_RE = re.compile(rf"\s*(?:{_MARKER_RE.pattern})")
_ID_TOKEN_RE = re.compile(r"[^\s\[\](),;]+")


def strip_markers(text: str) -> tuple[str, tuple[str, ...]]:
    """Return ``text`` without citation markers (whitespace collapsed) and the marker ids.

    The ids come in order of first appearance, without duplicates. A marker glued between two
    words (``a[x]b``) leaves a single space; otherwise it is removed with the whitespace before
    it, so ``penalty [notes-17].`` becomes ``penalty.``.
    """
    ids: list[str] = []
    return _strip(text, ids), tuple(dict.fromkeys(ids))


def marker_free(text: str) -> str:
    """`strip_markers`' text alone: an import compares every claim of a bundle with it, and
    collecting the ids took half the time."""
    return _strip(text, None)


def _strip(text: str, ids: list[str] | None) -> str:
    if "[" not in text:  # every marker holds a bracket
        return " ".join(text.split())

    def _replace(match: re.Match[str]) -> str:
        if ids is not None:
            ids.extend(_ID_TOKEN_RE.findall(match.group().strip()))
        before_is_text = match.start() > 0 and not match.group()[0].isspace()
        after = text[match.end() : match.end() + 1]
        glued = before_is_text and (after.isalnum() or after in "([\"'“‘")
        return " " if glued else ""

    return " ".join(_MARKER_WITH_SPACE_RE.sub(_replace, text).split())


# --- sentence boundaries ----------------------------------------------------------------------

_TERMINATOR_RE = re.compile(r"[.!?…‽]+")
_CLOSERS = frozenset("\"'”’»)]}*_")
_NEXT_WORD_RE = re.compile(r"[\"'“‘«(\[*_]*([^\W\d_][\w'’\-]*)")
_NUMBER_AHEAD_RE = re.compile(r"\(?(?:\d|[A-Z]\.?\d|[IVXLC]{2,}\b)")
_DOTTED_CAPS_RE = re.compile(r"(?:[A-Z]\.)+[A-Z]")
_LOWERCASE_NAME_RE = re.compile(r"[a-z]+[A-Z\d]")  # iPhone, eBay, macOS, v3.1


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Never end a sentence (titles, Latin and other connective abbreviations).
_NEVER_END = _words(
    """e.g eg i.e ie cf vs v viz approx ca dr mr mrs ms mx prof rev hon gen sgt capt lt incl esp
    w.r.t a.k.a aka sen gov mt"""
)
# Do not end a sentence when a number follows (``Fig. 2``, ``p. 4``, ``pp. 3–5``, ``s. 21``).
_NUMBERING = _words(
    """fig figs p pp pg pgs sec secs sect s ss ch chap chaps vol vols eq eqs tab tbl art arts
    para paras cl reg regs sch app appx ref refs ex exs thm def lem prop cor alg nr n l ll"""
)
# The same, matched with their capital: ``No. 5``, and dates such as ``Jan. 6``, ``Sept. 2023``
# or ``Thu. 14:00`` (``sat.`` or ``mar.`` in lowercase are words).
_NUMBERING_CASED = _words(
    """No Nos NO Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon Tue Tues Wed Thu Thur
    Thurs Fri Sat Sun"""
)
# ``a.m.``/``p.m.`` end a sentence unless a day, a month or a time zone follows them.
_CLOCK = frozenset({"a.m", "p.m"})
_AFTER_CLOCK = _words(
    """Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
    May June July August September October November December UTC GMT BST CET CEST ET EST EDT
    CT CST CDT MT MST MDT PT PST PDT"""
)
_TIME_ZONE_AHEAD_RE = re.compile(r"[ \t]+time\b", re.IGNORECASE)  # "8:40 a.m. Nepal time"
# A capital letter after one of these is a label (``Group B.``, ``vitamin D.``), not an initial.
_LABELLED = _words(
    """group plan vitamin hepatitis appendix annex type grade class part phase stage category
    tier level option schedule exhibit model series war pool zone terminal gate block wing ward
    platform row"""
)
# End a sentence only when a common sentence opener follows (``J. Smith`` vs ``... J. The``).
_OPENER_RULE = frozenset({"al", "st", "jr", "sr"})
_OPENERS = _words(
    """A An The This That These Those There Then They Their Its It In On At For From If When
    While Where We You Your He She His Her I As And But Or So To However Also Note See Yes
    Each All Some Both Most Many Only Please What Why How Which Who Is Are Was Were Do Does Did
    Can Could Should Would Will May Might Must My Our Not No Here"""
)


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _starts_lowercase(text: str, pos: int, end: int) -> bool:
    """Whether the word at ``pos`` is lowercase; names such as ``iPhone`` or ``v3.1`` are not."""
    return text[pos].islower() and not _LOWERCASE_NAME_RE.match(text, pos, end)


def _token_before(text: str, pos: int, floor: int) -> int:
    """Start of the word (letters, digits, underscores, inner dots) that ends at ``pos``."""
    start = pos
    while start > floor and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1
    while start < pos and text[start] == ".":
        start += 1
    return start


def _is_boundary(text: str, piece_start: int, term: re.Match[str], nxt: int, end: int) -> bool:
    """Whether the terminator ``term`` ends a sentence whose successor starts at ``nxt``."""
    if _starts_lowercase(text, nxt, end):
        return False
    if term.group() != ".":
        return True
    tok_start = _token_before(text, term.start(), piece_start)
    token = text[tok_start : term.start()]
    low = token.lower()
    word_match = _NEXT_WORD_RE.match(text, nxt, end)
    word = word_match.group(1) if word_match else ""
    if low in _NEVER_END:
        return False
    if (low in _NUMBERING or token in _NUMBERING_CASED) and _NUMBER_AHEAD_RE.match(text, nxt, end):
        return False
    if low in _CLOCK:
        zone_ahead = word_match and _TIME_ZONE_AHEAD_RE.match(text, word_match.end(), end)
        return not (word in _AFTER_CLOCK or zone_ahead)
    initial = len(token) == 1 and token.isupper()
    if initial and _is_label(text, piece_start, tok_start):
        return True
    if low in _OPENER_RULE or initial or _DOTTED_CAPS_RE.fullmatch(token):
        return word in _OPENERS
    standalone = tok_start == piece_start or text[tok_start - 1].isspace()
    if token.isdigit() and len(token) <= 3 and standalone:
        # An inline enumeration ("Steps: 1. Submit. 2. Wait.") rather than a sentence end. A
        # number glued to what precedes it (09:30, 3:1, 2-1) is never an item number.
        before = text[piece_start:tok_start].rstrip()
        if not before:
            return False
        if before.endswith(":") and _next_item_follows(text, int(token), nxt, end):
            return False
    return True


def _is_label(text: str, piece_start: int, at: int) -> bool:
    """Whether the capital at ``at`` is a unit or a label (``°C``, ``Group B``), not an initial."""
    if text[at - 1 : at] == "°":
        return True
    words_before = text[piece_start:at].split()
    return bool(words_before) and words_before[-1].lower() in _LABELLED


def _next_item_follows(text: str, number: int, pos: int, end: int) -> bool:
    """Whether item ``number + 1`` of an inline enumeration follows (``Marks: 40.`` has none)."""
    return re.compile(rf"(?<!\S){number + 1}[.)]\s").search(text, pos, end) is not None


def _split_segment(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` (one paragraph, bullet or line) into raw sentence ranges."""
    markers = [m.span() for m in _MARKER_RE.finditer(text, start, end)]
    marker_starts = [a for a, _ in markers]
    pieces: list[tuple[int, int]] = []
    cur = start
    for term in _TERMINATOR_RE.finditer(text, start, end):
        if term.start() < cur:
            continue
        inside = bisect_right(marker_starts, term.start()) - 1
        if inside >= 0 and term.start() < markers[inside][1]:
            continue  # a dot inside a marker such as [db-ch4:p2.3]
        pos = term.end()
        while pos < end and text[pos] in _CLOSERS:
            pos += 1
        boundary = pos
        while True:
            marker = _MARKER_RE.match(text, _skip_space(text, boundary, end), end)
            if not marker:
                break
            boundary = marker.end()
        if boundary < end and not text[boundary].isspace():
            continue
        nxt = _skip_space(text, boundary, end)
        if nxt >= end:
            break
        if _is_boundary(text, cur, term, nxt, end):
            pieces.append((cur, boundary))
            cur = boundary
    pieces.append((cur, end))
    return pieces


# --- lines, bullets and paragraphs ------------------------------------------------------------

_BULLET_RE = re.compile(
    r"[ \t]*(?:[-*+•▪◦‣–—]|\d{1,3}[.)]|\(\d{1,3}\)|[A-Za-z]\)|\([A-Za-z]\)|\([ivxIVX]+\))[ \t]+"
)
_HEADING_RE = re.compile(r"[ \t]*#{1,6}[ \t]+")
_SOFT_LINE_END = frozenset(",;(-–—&/+")


def _ends_with_unfinished_abbreviation(line: str, next_line: str) -> bool:
    if not line.endswith("."):
        return False
    token = line[_token_before(line, len(line) - 1, 0) : -1]
    low = token.lower()
    if low in _NEVER_END:
        return True
    return (low in _NUMBERING or token in _NUMBERING_CASED) and bool(
        _NUMBER_AHEAD_RE.match(next_line)
    )


def _continues(line: str, next_line: str) -> bool:
    """Whether ``next_line`` continues the sentence of ``line`` across a single newline."""
    first, last = next_line[0], line[-1]
    return (
        _starts_lowercase(next_line, 0, len(next_line))
        or bool(_MARKER_RE.match(next_line))
        or last in _SOFT_LINE_END
        or (last.isalnum() and (first.isdigit() or first == "("))
        or _ends_with_unfinished_abbreviation(line, next_line)
    )


def _segments(text: str) -> list[tuple[int, int]]:
    """Ranges of text that sentences cannot cross, bullet markers and heading hashes excluded."""
    segments: list[list[int]] = []
    previous: tuple[str, bool] | None = None  # (content of the last line, was it a heading)
    line_start = 0
    for line in text.split("\n"):
        line_end = line_start + len(line)
        content = line.strip()
        if not content:
            previous = None
        else:
            bullet = _BULLET_RE.match(line)
            heading = None if bullet else _HEADING_RE.match(line)
            prefix = bullet or heading
            if prefix:
                content = line[prefix.end() :].strip()
            if not content:  # a lone bullet marker or hash
                previous = None
            else:
                content_start = line_start + line.index(content, prefix.end() if prefix else 0)
                content_end = content_start + len(content)
                if (
                    previous is None
                    or prefix
                    or previous[1]
                    or not _continues(previous[0], content)
                ):
                    segments.append([content_start, content_end])
                else:
                    segments[-1][1] = content_end
                previous = (content, heading is not None)
        line_start = line_end + 1
    return [(a, b) for a, b in segments]


# --- claims -----------------------------------------------------------------------------------


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def propose_claims(answer_text: str) -> list[ProposedClaim]:
    """Propose one claim per sentence of ``answer_text`` (see the module docstring)."""
    claims: list[tuple[str, int, int, list[str]]] = []
    pending: tuple[int, list[str]] | None = None  # markers seen before the first claim
    for seg_start, seg_end in _segments(answer_text):
        for raw_start, raw_end in _split_segment(answer_text, seg_start, seg_end):
            start, end = _trim(answer_text, raw_start, raw_end)
            if start == end:
                continue
            body, citations = strip_markers(answer_text[start:end])
            if not any(ch.isalnum() for ch in body):
                if not citations:
                    continue  # a rule, a stray dash: not a claim
                if claims:
                    text, first, _, previous = claims[-1]
                    claims[-1] = (text, first, end, previous + list(citations))
                elif pending:
                    pending = (pending[0], pending[1] + list(citations))
                else:
                    pending = (start, list(citations))
                continue
            cited = list(citations)
            if pending:
                start, cited = pending[0], pending[1] + cited
                pending = None
            claims.append((body, start, end, cited))
    return [
        ProposedClaim(text=text, start=start, end=end, citations=tuple(dict.fromkeys(cited)))
        for text, start, end, cited in claims
    ]
