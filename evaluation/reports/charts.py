"""Server-side SVG for the lead's reports: small multiples, no JavaScript.

Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` that carry the
numbers in words, so a screen reader (or a text browser) gets what the picture shows. All text
is escaped here; the return values are marked safe for templates.

Uncertainty is drawn, never left to the reader: every rate bar carries its 95% interval (the
caller passes it: Wilson for rates, see evaluation.intervals), a bar over fewer than
``SMALL_N`` items is hatched and labelled "small n", and an undefined value reads "n/a", never
a zero-height bar.

Text is measured, not guessed from a character count: ``text_width`` uses the advance widths
of DejaVu Sans, the widest of the common sans-serif faces (what ``system-ui`` resolves to on
Debian), so a label measured to fit fits in narrower faces too. Labels wrap at word and
punctuation boundaries (a variant name like ``hybrid-rerank-k10`` breaks after a hyphen) and
are never cut short; chart labels that could collide are placed row by row until they do not.

About 700 lines in one module on purpose: every chart draws with the text measurement and
the SVG primitives at its top.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evaluation.intervals import SMALL_N

# Distinct at a glance and each dark enough to carry white text; variants are also labelled
# under their bars, so nothing depends on colour alone.
VARIANT_COLOURS = ("#2456c4", "#b35c00", "#1a7f37", "#7a3fb0", "#57606a", "#a11a23")
INK, MUTED, AXIS = "#1f2328", "#57606a", "#b4bbc5"
STAGE_COLOURS = {
    "not_in_corpus": ("#5c1a1a", "#ffffff"),
    "not_retrieved": ("#c4222d", "#ffffff"),
    "not_in_prompt": ("#d9730d", "#1f2328"),
    "generation": ("#e0b000", "#1f2328"),
    "false_abstention": ("#7a3fb0", "#ffffff"),
    "no_evidence": ("#6e7781", "#ffffff"),
    "ok": ("#1a7f37", "#ffffff"),
    "pending": ("#b4bbc5", "#1f2328"),
    "unlabelled": ("#e3e7ec", "#1f2328"),
}
STAGE_LABELS = {
    "not_in_corpus": "index",
    "not_retrieved": "retrieval",
    "not_in_prompt": "prompt",
    "generation": "generation",
    "false_abstention": "false abstention",
    "no_evidence": "no evidence named",
    "ok": "ok",
    "pending": "pending",
    "unlabelled": "unlabelled",
}
FONT = 'font-family="system-ui, sans-serif"'
_ids = itertools.count(1)

# --- Measuring and wrapping text ----------------------------------------------------------------

# Advance widths of DejaVu Sans (em units) for printable ASCII and the symbols the reports use;
# anything else counts as a full em (CJK glyphs are one em wide).
_MEASURED = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~·–—…≤≥−×→↔◆✓✗°’“”"  # noqa: E501
_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698,
    770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732,
    684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
    634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
    525, 636, 337, 636, 838, 318, 500, 1000, 1000, 838, 838, 838, 838, 838, 838, 769, 838, 838,
    500, 318, 518, 518,
)  # fmt: skip
_EM = dict(zip(_MEASURED, (w / 1000 for w in _WIDTHS), strict=True))
# DejaVu Sans Bold runs about 9% wider than the book weight.
_BOLD = 1.1
# Where a long label may break: after these characters (a space is dropped at the break).
_BREAK_AFTER = frozenset(" -_/.:@,;|+")


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """The width in px of ``text`` at font size ``size`` (an upper bound for common faces)."""
    em = sum(_EM.get(ch, 1.0) for ch in text)
    return em * size * (_BOLD if bold else 1.0)


def _tokens(text: str) -> list[str]:
    """Pieces a line may break between, each ending with its break character."""
    tokens, current = [], ""
    for ch in text:
        current += ch
        if ch in _BREAK_AFTER:
            tokens.append(current)
            current = ""
    if current:
        tokens.append(current)
    return tokens


def wrap_text(text: str, width: float, size: float, *, bold: bool = False) -> list[str]:
    """``text`` in lines no wider than ``width`` px: broken at spaces and punctuation, and
    inside a word only when the word alone is wider than the line. Nothing is dropped."""
    lines: list[str] = []
    line = ""
    for token in _tokens(text):
        candidate = line + token
        if text_width(candidate.rstrip(), size, bold=bold) <= width or not line.strip():
            line = candidate
        else:
            lines.append(line.rstrip())
            line = token
        # A token wider than a whole line is cut where the line is full.
        while text_width(line.rstrip(), size, bold=bold) > width and len(line.rstrip()) > 1:
            cut = len(line)
            while cut > 1 and text_width(line[:cut], size, bold=bold) > width:
                cut -= 1
            lines.append(line[:cut])
            line = line[cut:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


# --- SVG primitives ---------------------------------------------------------------------------


def variant_colour(index: int) -> str:
    return VARIANT_COLOURS[index % len(VARIANT_COLOURS)]


def _svg(
    width: float, height: float, title: str, desc: str, body: list[str], *, defs: str = ""
) -> SafeString:
    uid = f"chart-{next(_ids)}"
    width, height = math.ceil(width), math.ceil(height)
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="{uid}-t {uid}-d" class="chart">'
        f'<title id="{uid}-t">{escape(title)}</title><desc id="{uid}-d">{escape(desc)}</desc>'
        + (f"<defs>{defs}</defs>".replace("{uid}", uid) if defs else "")
        + "".join(body).replace("{uid}", uid)
        + "</svg>"
    )


def _text(
    x: float, y: float, text: str, *, size=11, anchor="middle", fill=INK, bold=False, halo=False
):
    weight = ' font-weight="600"' if bold else ""
    # A halo (a white outline under the glyphs) keeps text readable over grid lines.
    outline = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"' if halo else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="{fill}" {FONT}{weight}{outline}>{escape(text)}</text>'
    )


def _lines(x: float, y: float, lines: Sequence[str], *, line_h: float, **kwargs) -> list[str]:
    """Text lines stacked downwards from baseline y."""
    return [_text(x, y + i * line_h, line, **kwargs) for i, line in enumerate(lines)]


def _whisker(x: float, y_low: float, y_high: float, *, cap: float = 5) -> str:
    """A vertical interval with caps, drawn dark over a white halo so it reads on any bar."""
    segments = (
        f"M{x:.1f} {y_low:.1f}V{y_high:.1f}"
        f"M{x - cap:.1f} {y_low:.1f}H{x + cap:.1f}M{x - cap:.1f} {y_high:.1f}H{x + cap:.1f}"
    )
    return (
        f'<path d="{segments}" stroke="#ffffff" stroke-width="3.5" fill="none"/>'
        f'<path d="{segments}" stroke="{INK}" stroke-width="1.5" fill="none"/>'
    )


def _hatch(pattern_id: str, colour: str) -> str:
    """A diagonal hatch in the bar's colour: a bar over a small sample."""
    return (
        f'<pattern id="{pattern_id}" patternUnits="userSpaceOnUse" width="6" height="6" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{colour}" '
        f'fill-opacity="0.25"/><line x1="1.5" y1="0" x2="1.5" y2="6" stroke="{colour}" '
        'stroke-width="3"/></pattern>'
    )


def fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def interval_text(ci: Sequence[float] | None, digits: int = 2) -> str:
    return f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]" if ci else ""


# --- One metric, one bar per variant ----------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    n: int
    colour: str = VARIANT_COLOURS[0]
    ci: tuple[float, float] | None = None  # the 95% interval, on the value's scale


LABEL_SIZE, LABEL_LINE = 11, 13
SLOT_MIN, SLOT_MAX = 62, 124


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    *,
    max_value: float = 1.0,
    digits: int = 2,
    unit: str = "",
    small_n: int = SMALL_N,
) -> SafeString:
    """One metric, one bar per variant: the value on top, its 95% interval as a whisker, the
    variant's name (wrapped, never clipped) and n under each bar. A bar over fewer than
    ``small_n`` items is hatched and says "small n"; an undefined value reads "n/a"."""
    bar_w, left, plot_h = 40, 8, 90
    # Wide enough for the longest word of a name, within bounds; longer words break.
    longest = max(
        (text_width(t.strip(), LABEL_SIZE) for b in bars for t in _tokens(b.label)), default=0
    )
    slot = max(SLOT_MIN, min(SLOT_MAX, math.ceil(longest) + 8))
    labels = [wrap_text(b.label, slot - 6, LABEL_SIZE) for b in bars]
    label_lines = max((len(lines) for lines in labels), default=1)
    plot_w = left * 2 + len(bars) * slot
    title_lines = wrap_text(title, max(plot_w, 240) - 16, 12, bold=True)
    width = max(plot_w, 180, max(text_width(line, 12, bold=True) for line in title_lines) + 16)
    top = 10 + 15 * len(title_lines) + 18  # room for the value over the tallest whisker
    base = top + plot_h
    any_small = any(b.value is not None and b.n < small_n for b in bars)
    height = base + 6 + LABEL_LINE * label_lines + 13 + (12 if any_small else 0) + 4
    offset = (width - plot_w) / 2
    body = _lines(8, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    body.append(f'<line x1="{left}" y1="{base}" x2="{width - left}" y2="{base}" stroke="{AXIS}"/>')
    defs, described = [], []
    hatched: dict[str, str] = {}

    def y_of(value: float) -> float:
        share = 0.0 if max_value <= 0 else max(0.0, min(1.0, value / max_value))
        return base - share * plot_h

    for i, (bar, lines) in enumerate(zip(bars, labels, strict=True)):
        cx = offset + left + i * slot + slot / 2
        small = bar.n < small_n
        if bar.value is None:
            body.append(_text(cx, base - 6, "n/a", fill=MUTED))
            described.append(f"{bar.label}: undefined (n={bar.n})")
        else:
            y = y_of(bar.value)
            shown = f"{fmt(bar.value, digits)}{unit}"
            ci = bar.ci
            fill = bar.colour
            if small:
                if bar.colour not in hatched:
                    hatched[bar.colour] = f"{{uid}}-hatch-{len(hatched)}"
                    defs.append(_hatch(hatched[bar.colour], bar.colour))
                fill = f"url(#{hatched[bar.colour]})"
            words = f"{shown}, 95% interval {interval_text(ci, digits)}" if ci else shown
            words += f", n={bar.n}" + (", small sample" if small else "")
            body.append(
                f'<rect x="{cx - bar_w / 2:.1f}" y="{y:.1f}" width="{bar_w}" '
                f'height="{base - y:.1f}" fill="{fill}" stroke="{bar.colour}">'
                f"<title>{escape(f'{bar.label}: {words}')}</title></rect>"
            )
            top_of = y
            if ci is not None:
                y_low, y_high = y_of(ci[0]), y_of(ci[1])
                body.append(_whisker(cx, y_low, y_high))
                top_of = min(y, y_high)
            body.append(_text(cx, top_of - 5, shown))
            described.append(f"{bar.label}: {words}")
        body += _lines(cx, base + 15, lines, line_h=LABEL_LINE, size=LABEL_SIZE)
        y_n = base + 15 + LABEL_LINE * label_lines
        body.append(_text(cx, y_n - 1, f"n={bar.n}", size=10, fill=MUTED))
        if small and bar.value is not None:
            body.append(_text(cx, y_n + 11, "small n", size=10, fill=MUTED, bold=True))
    return _svg(width, height, title, "; ".join(described), body, defs="".join(defs))


# --- Stage diagnosis --------------------------------------------------------------------------


def stage_bar(variant: str, counts: dict[str, int], *, width: int = 560) -> SafeString:
    """One variant's answers of answerable cases as a stacked bar, left to right in pipeline
    order (index → retrieval → prompt → generation), then ok, pending and unlabelled."""
    total = sum(counts.values())
    left, bar_h = 8, 26
    plot_w = width - 2 * left
    title = f"Stage diagnosis, {variant}: {total} answers of answerable cases"
    title_lines = wrap_text(title, width - 16, 12, bold=True)
    bar_y = 10 + 15 * len(title_lines) + 6
    body = _lines(left, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    described = [f"{STAGE_LABELS[s]}: {n}" for s, n in counts.items()]
    x = float(left)
    if total == 0:
        body.append(_text(width / 2, bar_y + 17, "no answers of answerable cases", fill=MUTED))
    for stage, n in counts.items():
        if not n:
            continue
        w = plot_w * n / total
        fill, ink = STAGE_COLOURS[stage]
        body.append(
            f'<rect x="{x:.1f}" y="{bar_y}" width="{w:.1f}" height="{bar_h}" fill="{fill}" '
            f'stroke="#ffffff"><title>{escape(f"{STAGE_LABELS[stage]}: {n}")}</title></rect>'
        )
        if text_width(str(n), 11, bold=True) + 6 <= w:
            body.append(_text(x + w / 2, bar_y + 17, str(n), fill=ink, bold=True))
        x += w
    # legend, in the same order as the segments, wrapped by measured width
    lx, ly = float(left), bar_y + bar_h + 18
    for stage, n in counts.items():
        label = f"{STAGE_LABELS[stage]} {n}"
        item_w = 14 + text_width(label, 10) + 12
        if lx + item_w > width and lx > left:
            lx, ly = float(left), ly + 16
        fill, _ = STAGE_COLOURS[stage]
        body.append(
            f'<rect x="{lx:.1f}" y="{ly - 9}" width="10" height="10" fill="{fill}" '
            f'stroke="{MUTED}" stroke-width="0.5"/>'
        )
        body.append(_text(lx + 14, ly, label, size=10, anchor="start"))
        lx += item_w
    return _svg(width, ly + 10, title, "; ".join(described), body)


# --- Latency ----------------------------------------------------------------------------------


def latency_bins(values: Sequence[float], *, bins: int = 20) -> list[float]:
    """Shared bin edges for every variant's histogram: 0 to the largest value, rounded up."""
    top = max(values, default=0.0)
    if top <= 0:
        return [0.0, 1.0]
    magnitude = 10 ** math.floor(math.log10(top))
    top = math.ceil(top / magnitude) * magnitude
    return [top * i / bins for i in range(bins + 1)]


def bin_counts(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    """How many values fall in each bin; the last bin includes its upper edge."""
    counts = [0] * (len(edges) - 1)
    for value in values:
        counts[max(0, min(len(counts) - 1, bisect.bisect_right(edges, value) - 1))] += 1
    return counts


def compact_count(n: int) -> str:
    """1234 → 1.2k, 25000 → 25k: a count that fits above a narrow bin."""
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    return f"{round(n / 1000)}k"


@dataclass(frozen=True)
class Placed:
    """A text label placed on a chart: its anchor x, baseline y, anchor and extent."""

    text: str
    x: float
    y: float
    anchor: str
    x0: float
    x1: float


def place_labels(
    marks: Sequence[tuple[str, float, str]],
    *,
    rows: Sequence[float],
    low: float,
    high: float,
    size: float = 10,
    gap: float = 3,
    pad: float = 4,
) -> list[Placed]:
    """Put each (text, x, preferred side) label beside its x, on the first row where it stays
    within [low, high] and clear of the labels already placed there: the preferred side first,
    then the other, then the next row. No two labels ever overlap (rows are added as needed)."""
    placed: list[Placed] = []
    row_ys = list(rows)
    step = (row_ys[-1] - row_ys[-2]) if len(row_ys) > 1 else 12
    for text, x, side in marks:
        w = text_width(text, size)
        x = min(high, max(low, x))
        options = []  # (anchor, x0) that stay within the chart, preferred side first
        for anchor in (side, "start" if side == "end" else "end"):
            x0 = x + gap if anchor == "start" else x - gap - w
            if x0 >= low and x0 + w <= high:
                options.append((anchor, x0))
        if not options:  # wider than the room on either side: pinned to the nearer edge
            x0 = low if x - low < high - x else max(low, high - w)
            options.append(("start", x0))
        row = 0
        while True:
            if row >= len(row_ys):
                row_ys.append(row_ys[-1] + step)
            y = row_ys[row]
            free = [
                (anchor, x0)
                for anchor, x0 in options
                if not any(p.y == y and x0 < p.x1 + pad and p.x0 < x0 + w + pad for p in placed)
            ]
            if free:
                anchor, x0 = free[0]
                ax = x0 if anchor == "start" else x0 + w
                placed.append(Placed(text, ax, y, anchor, x0, x0 + w))
                break
            row += 1
    return placed


def latency_histogram(
    variant: str,
    counts: Sequence[int],
    edges: Sequence[float],
    *,
    max_count: int,
    mean: float | None,
    p95: float | None,
    colour: str = VARIANT_COLOURS[0],
    width: int = 460,
) -> SafeString:
    """elapsed_ms of one variant's answers counted on the shared bins (``bin_counts``), with
    the mean and p95 marked. A bin's count is written above it only where it fits the bin's
    width (its tooltip and the description always carry it); the mean and p95 labels never
    overlap each other."""
    left = 8
    plot_w = width - 2 * left
    span = edges[-1] - edges[0] or 1
    title = f"Latency, {variant}: {sum(counts)} answers"
    title_lines = wrap_text(title, width - 16, 12, bold=True)
    # The mean's label prefers the left of its line, p95's the right.
    marks = [
        (f"{name} {value:.0f}", left + plot_w * (value - edges[0]) / span, side, dash)
        for name, value, side, dash in (("mean", mean, "end", "4 2"), ("p95", p95, "start", "1 2"))
        if value is not None
    ]
    label_top = 10 + 15 * len(title_lines) + 12
    placed = place_labels(
        [m[:3] for m in marks], rows=(label_top, label_top + 12), low=left, high=width - left
    )
    rows_used = max((p.y for p in placed), default=label_top)
    top = rows_used + 16  # the plot starts under the mark labels and the tallest count
    plot_h = 80
    base = top + plot_h
    body = _lines(left, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    bin_w = plot_w / len(counts)
    bars = []  # (x0, x1, y top) of each drawn bin, to keep count labels off other bars
    for i, n in enumerate(counts):
        if not n:
            continue
        h = plot_h * n / max(max_count, 1)
        x = left + i * bin_w
        label = f"{edges[i]:.0f}–{edges[i + 1]:.0f} ms: {n}"
        body.append(
            f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{bin_w - 2:.1f}" height="{h:.1f}" '
            f'fill="{colour}"><title>{escape(label)}</title></rect>'
        )
        bars.append((i, x + 1, x + bin_w - 1, base - h, n))
    # Counts over their bins, tallest first; a count that would run into another bar or
    # another count, or out of the chart, is left to the bin's tooltip and the description.
    taken: list[tuple[float, float, float, float]] = []
    for i, bx0, bx1, top_y, n in sorted(bars, key=lambda b: b[3]):
        shown = compact_count(n)
        w = text_width(shown, 10)
        cx = (bx0 + bx1) / 2
        box = (cx - w / 2, top_y - 12, cx + w / 2, top_y - 2)
        inside = box[0] >= left and box[2] <= width - left
        hits_bar = any(
            j != i and box[0] < x1 and x0 < box[2] and box[3] > y_top
            for j, x0, x1, y_top, _ in bars
        )
        hits_text = any(
            box[0] < t[2] + 2 and t[0] < box[2] + 2 and box[1] < t[3] and t[1] < box[3]
            for t in taken
        )
        if inside and not hits_bar and not hits_text:
            taken.append(box)
            body.append(_text(cx, top_y - 3, shown, size=10))
    body.append(f'<line x1="{left}" y1="{base}" x2="{width - left}" y2="{base}" stroke="{AXIS}"/>')
    body.append(_text(left, base + 14, "0 ms", size=10, anchor="start", fill=MUTED))
    body.append(_text(left + plot_w / 2, base + 14, f"{edges[-1] / 2:.0f}", size=10, fill=MUTED))
    body.append(
        _text(width - left, base + 14, f"{edges[-1]:.0f} ms", size=10, anchor="end", fill=MUTED)
    )
    for (_, x, _, dash), label in zip(marks, placed, strict=True):
        body.append(
            f'<line x1="{x:.1f}" y1="{label.y - 10:.1f}" x2="{x:.1f}" y2="{base}" '
            f'stroke="{INK}" stroke-dasharray="{dash}"/>'
        )
        body.append(_text(label.x, label.y, label.text, size=10, anchor=label.anchor))
    desc = ", ".join(
        [f"{edges[i]:.0f} to {edges[i + 1]:.0f} ms: {n}" for i, n in enumerate(counts) if n]
        + [f"{text} ms" for text, *_ in marks]
    )
    return _svg(width, base + 20, title, desc or "no latency recorded", body)


# --- Intervals side by side (kappa, judge versus the human ceiling) --------------------------


@dataclass(frozen=True)
class IntervalRow:
    label: str
    value: float | None
    ci: tuple[float, float] | None
    n: int
    undefined: str = ""  # why the value is undefined, shown in its place
    colour: str = VARIANT_COLOURS[0]


def interval_chart(
    title: str,
    rows: Sequence[IntervalRow],
    *,
    low: float = 0.0,
    high: float = 1.0,
    width: int = 340,
    digits: int = 2,
    small_n: int = SMALL_N,
    reference: float | None = None,
) -> SafeString:
    """One row per estimate, its name above it: a dot at the value and a line across its 95%
    interval on a shared axis, the number with its interval and n to the right. An estimate
    over fewer than ``small_n`` items has a hollow dot and says "small n"; an undefined one
    says why in its place. Narrow by design (names sit above, not beside, the plot), so it
    fits a phone's width as it is."""
    left = 8
    values = [
        f"{fmt(r.value, digits)} {interval_text(r.ci, digits)}".strip()
        for r in rows
        if r.value is not None
    ]
    # The numbers on the right get the room the widest of them takes (never cut at the edge).
    right_w = max([100.0] + [text_width(v, 10.5) + 16 for v in values])
    plot_x0, plot_x1 = left + 4, width - right_w
    title_lines = wrap_text(title, width - 16, 12, bold=True)
    y = 10 + 15 * len(title_lines) + 6
    body = _lines(left, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    span = (high - low) or 1.0

    def x_of(value: float) -> float:
        return plot_x0 + (min(high, max(low, value)) - low) / span * (plot_x1 - plot_x0)

    first_row = y
    grid_at = len(body)  # grid lines go under the rows, drawn once their height is known
    described = []
    for row in rows:
        lines = wrap_text(row.label, width - 16, 11)
        body += _lines(left, y + 11, lines, line_h=13, anchor="start", halo=True)
        y += 13 * len(lines) + 2
        small = row.n < small_n
        if row.value is None:
            note_lines = wrap_text(row.undefined or "undefined", width - 16 - 4, 10)
            note = {"size": 10, "anchor": "start", "fill": MUTED, "halo": True}
            body += _lines(plot_x0, y + 10, note_lines, line_h=12, **note)
            y += 12 * len(note_lines) + 8
            described.append(f"{row.label}: undefined ({row.undefined or 'no value'}), n={row.n}")
            continue
        cy = y + 8
        if row.ci is not None:
            x_lo, x_hi = x_of(row.ci[0]), x_of(row.ci[1])
            body.append(
                f'<path d="M{x_lo:.1f} {cy:.1f}H{x_hi:.1f}M{x_lo:.1f} {cy - 5:.1f}'
                f'V{cy + 5:.1f}M{x_hi:.1f} {cy - 5:.1f}V{cy + 5:.1f}" stroke="{row.colour}" '
                'stroke-width="2" fill="none"/>'
            )
        dot_fill = "#ffffff" if small else row.colour
        body.append(
            f'<circle cx="{x_of(row.value):.1f}" cy="{cy:.1f}" r="4.5" fill="{dot_fill}" '
            f'stroke="{row.colour}" stroke-width="2"/>'
        )
        shown = f"{fmt(row.value, digits)} {interval_text(row.ci, digits)}".strip()
        body.append(_text(plot_x1 + 8, cy + 1, shown, size=10.5, anchor="start"))
        n_text = f"n={row.n}" + (" · small n" if small else "")
        body.append(_text(plot_x1 + 8, cy + 13, n_text, size=10, anchor="start", fill=MUTED))
        words = fmt(row.value, digits)
        if row.ci:
            words += f", 95% interval {interval_text(row.ci, digits)}"
        described.append(f"{row.label}: {words}, n={row.n}" + (", small sample" if small else ""))
        y += 26
    # the axis and its ticks
    body.append(
        f'<line x1="{plot_x0:.1f}" y1="{y + 2:.1f}" x2="{plot_x1:.1f}" y2="{y + 2:.1f}" '
        f'stroke="{AXIS}"/>'
    )
    step = 0.5 if span > 1.2 else 0.25 if span > 0.6 else 0.1
    tick = math.ceil(low / step) * step
    grid = []
    while tick <= high + 1e-9:
        tx = x_of(tick)
        grid.append(
            f'<line x1="{tx:.1f}" y1="{first_row:.1f}" x2="{tx:.1f}" y2="{y + 2:.1f}" '
            f'stroke="#eef0f3"/>'
        )
        body.append(_text(tx, y + 15, f"{tick:g}", size=10, fill=MUTED))
        tick += step
    if reference is not None and low <= reference <= high:
        rx = x_of(reference)
        grid.append(
            f'<line x1="{rx:.1f}" y1="{first_row:.1f}" x2="{rx:.1f}" y2="{y + 2:.1f}" '
            f'stroke="{MUTED}" stroke-dasharray="3 2"/>'
        )
    body[grid_at:grid_at] = grid
    return _svg(width, y + 22, title, "; ".join(described), body)


def kappa_axis(rows: Sequence[IntervalRow]) -> float:
    """The left end of a kappa axis: 0, or lower in steps of 0.5 when an estimate or its
    interval is negative (kappa runs from −1 to 1)."""
    lows = [r.value for r in rows if r.value is not None]
    lows += [r.ci[0] for r in rows if r.ci is not None]
    lowest = min(lows, default=0.0)
    return 0.0 if lowest >= 0 else max(-1.0, math.floor(lowest * 2) / 2)


# --- Confusion heat map -----------------------------------------------------------------------


def _mix(share: float) -> str:
    """White to the accent colour (#2456c4) by share."""
    start, end = (255, 255, 255), (0x24, 0x56, 0xC4)
    return "#" + "".join(
        f"{round(s + (e - s) * share):02x}" for s, e in zip(start, end, strict=True)
    )


def heatmap(
    title: str,
    labels: Sequence[str],
    matrix: Sequence[Sequence[int]],
    *,
    rows_are: str = "gold",
    columns_are: str = "judge",
    shown: Sequence[str] | None = None,
    short: Sequence[str] | None = None,
) -> SafeString:
    """A confusion matrix as a heat map: each cell shaded by its share of its row (how the
    ``rows_are`` label was called), with its count; the diagonal outlined. ``short`` names the
    columns in few letters (the rows carry the full names), so the map fits a phone."""
    shown = list(shown or [str(label).replace("_", " ") for label in labels])
    heads = list(short or shown)
    widest_word = max((text_width(w, 10) for s in heads for w in s.split()), default=0)
    cell_w, cell_h, left = max(48, math.ceil(widest_word) + 10), 30, 8
    row_label_w = min(110.0, max((text_width(s, 11) for s in shown), default=40) + 6)
    head = [wrap_text(s, cell_w - 4, 10) for s in heads]
    head_lines = max((len(h) for h in head), default=1)
    x0 = left + row_label_w + 8
    width = max(x0 + cell_w * len(labels) + 8, 200)
    title_lines = wrap_text(title, width - 16, 12, bold=True)
    y_axis = 10 + 15 * len(title_lines) + 6
    y0 = y_axis + 14 + 12 * head_lines
    body = _lines(left, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    body.append(
        _text(x0 + cell_w * len(labels) / 2, y_axis + 6, f"{columns_are} →", size=10, fill=MUTED)
    )
    for j, lines in enumerate(head):
        body += _lines(
            x0 + cell_w * j + cell_w / 2, y_axis + 20, lines, line_h=12, size=10, fill=MUTED
        )
    body.append(_text(left, y0 - 4, f"{rows_are} ↓", size=10, anchor="start", fill=MUTED))
    described = []
    for i, row in enumerate(matrix):
        y = y0 + i * cell_h
        row_lines = wrap_text(shown[i], row_label_w - 4, 11)
        first = y + cell_h / 2 + 4 - 6.5 * (len(row_lines) - 1)
        body += _lines(left, first, row_lines, line_h=13, anchor="start")
        total = sum(row)
        for j, count in enumerate(row):
            share = count / total if total else 0.0
            x = x0 + j * cell_w
            diagonal = i == j
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w}" height="{cell_h}" '
                f'fill="{_mix(share)}" stroke="{INK if diagonal else "#d8dce2"}" '
                f'stroke-width="{1.5 if diagonal else 1}"><title>'
                + escape(
                    f"{rows_are} {shown[i]}, {columns_are} {shown[j]}: {count}"
                    + (f" ({share:.0%} of the row)" if total else "")
                )
                + "</title></rect>"
            )
            ink = "#ffffff" if share > 0.55 else INK
            body.append(_text(x + cell_w / 2, y + cell_h / 2 + 4, str(count), fill=ink, bold=True))
            if count:
                described.append(f"{rows_are} {shown[i]}, {columns_are} {shown[j]}: {count}")
    height = y0 + cell_h * len(matrix) + 8
    return _svg(width, height, title, "; ".join(described) or "no items", body)


# --- The budget planner's curve ---------------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    answers: int
    uniform: float
    active: float | None


def half_width_curve(
    title: str,
    points: Sequence[CurvePoint],
    *,
    target: float,
    current: tuple[int, float] | None = None,
    width: int = 560,
) -> SafeString:
    """Expected 95% half-width against answers labelled (log scale), one line per design
    (uniform solid, active dashed: told apart without colour), the half-width asked for as a
    dotted level and today's point (answers labelled, today's half-width) as a diamond. The
    vertical axis stops at 0.5 (a share's interval cannot usefully be wider); a curve above it
    runs along the top, and the description carries every number."""
    left, right, plot_h = 44, 16, 180
    title_lines = wrap_text(title, width - 16, 12, bold=True)
    top = 10 + 15 * len(title_lines) + 26  # room for the legend row
    base = top + plot_h
    body = _lines(8, 22, title_lines, line_h=15, size=12, anchor="start", bold=True)
    xs = [p.answers for p in points if p.answers > 0]
    x_max = max(xs + ([current[0]] if current else []) + [10])
    values = [p.uniform for p in points] + [p.active for p in points if p.active is not None]
    values += [target] + ([current[1]] if current else [])
    y_max = min(0.5, max(values) * 1.1) or 0.5
    log_hi = math.log10(x_max)

    def x_of(answers: float) -> float:
        share = math.log10(max(answers, 1)) / log_hi if log_hi else 0.0
        return left + share * (width - left - right)

    def y_of(value: float) -> float:
        return base - min(value, y_max) / y_max * plot_h

    # grid: decades on x, five steps on y
    decade = 1
    while decade <= x_max:
        gx = x_of(decade)
        body.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{base}" stroke="#eef0f3"/>')
        body.append(_text(gx, base + 14, f"{decade:,}", size=10, fill=MUTED))
        decade *= 10
    for i in range(6):
        value = y_max * i / 5
        gy = y_of(value)
        body.append(
            f'<line x1="{left}" y1="{gy:.1f}" x2="{width - right}" y2="{gy:.1f}" stroke="#eef0f3"/>'
        )
        body.append(_text(left - 4, gy + 3.5, f"±{value:.3f}", size=9.5, anchor="end", fill=MUTED))
    body.append(f'<path d="M{left} {top}V{base}H{width - right}" stroke="{AXIS}" fill="none"/>')
    body.append(
        _text(
            (left + width - right) / 2,
            base + 28,
            "answers labelled (log scale)",
            size=10,
            fill=MUTED,
        )
    )
    ty = y_of(target)
    body.append(
        f'<line x1="{left}" y1="{ty:.1f}" x2="{width - right}" y2="{ty:.1f}" stroke="{INK}" '
        'stroke-dasharray="1 3"/>'
    )
    body.append(
        _text(width - right, ty - 4, f"asked: ±{target:g}", size=10, anchor="end", halo=True)
    )
    designs = [("uniform", VARIANT_COLOURS[0], "")]
    if any(p.active is not None for p in points):
        designs.append(("active", VARIANT_COLOURS[1], ' stroke-dasharray="6 3"'))
    for name, colour, dash in designs:
        path = "".join(
            f"{'M' if i == 0 else 'L'}{x_of(p.answers):.1f} {y_of(getattr(p, name)):.1f}"
            for i, p in enumerate(q for q in points if q.answers > 0)
        )
        body.append(f'<path d="{path}" stroke="{colour}" stroke-width="2" fill="none"{dash}/>')
    # the legend, one row under the title
    lx = left
    legend_y = top - 12
    for name, colour, dash in designs:
        body.append(
            f'<line x1="{lx}" y1="{legend_y - 3.5}" x2="{lx + 22}" y2="{legend_y - 3.5}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        body.append(_text(lx + 26, legend_y, name, size=10.5, anchor="start"))
        lx += 26 + text_width(name, 10.5) + 16
    described = [
        f"{p.answers} answers: uniform ±{p.uniform:.3f}"
        + (f", active ±{p.active:.3f}" if p.active is not None else "")
        for p in points
    ]
    if current is not None:
        cx, cy = x_of(current[0]), y_of(current[1])
        body.append(
            f'<path d="M{cx:.1f} {cy - 6:.1f}L{cx + 6:.1f} {cy:.1f}L{cx:.1f} {cy + 6:.1f}'
            f'L{cx - 6:.1f} {cy:.1f}Z" fill="{INK}"/>'
        )
        body.append(
            _text(
                lx,
                legend_y,
                f"◆ now: {current[0]} answers, ±{current[1]:.3f}",
                size=10.5,
                anchor="start",
            )
        )
        described.insert(0, f"now: {current[0]} answers labelled, ±{current[1]:.3f}")
    described.insert(0, f"asked: ±{target:g}")
    return _svg(width, base + 36, title, "; ".join(described), body)
