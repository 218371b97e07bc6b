"""Server-side SVG for the evaluation report: small multiples, no JavaScript.

Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` that carry the
numbers in words, so a screen reader (or a text browser) gets what the picture shows. All text
is escaped here; the return values are marked safe for templates.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Distinct at a glance and each dark enough to carry white text; variants are also labelled
# under their bars, so nothing depends on colour alone.
VARIANT_COLOURS = ("#2456c4", "#b35c00", "#1a7f37", "#7a3fb0", "#57606a", "#a11a23")
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


def variant_colour(index: int) -> str:
    return VARIANT_COLOURS[index % len(VARIANT_COLOURS)]


def _svg(width: int, height: int, title: str, desc: str, body: list[str]) -> SafeString:
    uid = f"chart-{next(_ids)}"
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="{uid}-t {uid}-d" class="chart">'
        f'<title id="{uid}-t">{escape(title)}</title><desc id="{uid}-d">{escape(desc)}</desc>'
        + "".join(body)
        + "</svg>"
    )


def _text(x: float, y: float, text: str, *, size=11, anchor="middle", fill="#1f2328", bold=False):
    weight = ' font-weight="600"' if bold else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="{fill}" {FONT}{weight}>{escape(text)}</text>'
    )


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    n: int
    colour: str = VARIANT_COLOURS[0]


def bar_chart(
    title: str, bars: Sequence[Bar], *, max_value: float = 1.0, digits: int = 2, unit: str = ""
) -> SafeString:
    """One metric, one bar per variant, the value on top and n under each bar. An undefined
    value (no eligible item) is drawn as 'n/a', never as a zero-height bar."""
    bar_w, gap, left, top, plot_h = 44, 18, 8, 34, 90
    # 12 px bold runs to about 7.5 px a character: a narrower chart cut its title short.
    width = max(180, left * 2 + len(bars) * (bar_w + gap) - gap, int(7.5 * len(title)) + 16)
    height = top + plot_h + 34
    base = top + plot_h
    body = [
        _text(8, 16, title, size=12, anchor="start", bold=True),
        f'<line x1="{left}" y1="{base}" x2="{width - left}" y2="{base}" stroke="#b4bbc5"/>',
    ]
    described = []
    for i, bar in enumerate(bars):
        x = left + i * (bar_w + gap)
        cx = x + bar_w / 2
        if bar.value is None:
            body.append(_text(cx, base - 6, "n/a", fill="#57606a"))
            described.append(f"{bar.label}: undefined (n={bar.n})")
        else:
            h = 0 if max_value <= 0 else max(0.0, min(1.0, bar.value / max_value)) * plot_h
            shown = f"{bar.value:.{digits}f}{unit}"
            body.append(
                f'<rect x="{x}" y="{base - h:.1f}" width="{bar_w}" height="{h:.1f}" '
                f'fill="{bar.colour}"><title>{escape(f"{bar.label}: {shown}, n={bar.n}")}'
                "</title></rect>"
            )
            body.append(_text(cx, base - h - 4, shown))
            described.append(f"{bar.label}: {shown} (n={bar.n})")
        body.append(_text(cx, base + 14, _short(bar.label, 9)))
        body.append(_text(cx, base + 27, f"n={bar.n}", size=10, fill="#57606a"))
    return _svg(width, height, title, "; ".join(described), body)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stage_bar(variant: str, counts: dict[str, int], *, width: int = 560) -> SafeString:
    """One variant's answers of answerable cases as a stacked bar, left to right in pipeline
    order (index → retrieval → prompt → generation), then ok, pending and unlabelled."""
    total = sum(counts.values())
    left, bar_y, bar_h = 8, 26, 26
    plot_w = width - 2 * left
    title = f"Stage diagnosis, {variant}: {total} answers of answerable cases"
    body = [_text(left, 16, title, size=12, anchor="start", bold=True)]
    described = [f"{STAGE_LABELS[s]}: {n}" for s, n in counts.items()]
    x = float(left)
    if total == 0:
        body.append(_text(width / 2, bar_y + 17, "no answers of answerable cases", fill="#57606a"))
    for stage, n in counts.items():
        if not n:
            continue
        w = plot_w * n / total
        fill, ink = STAGE_COLOURS[stage]
        body.append(
            f'<rect x="{x:.1f}" y="{bar_y}" width="{w:.1f}" height="{bar_h}" fill="{fill}" '
            f'stroke="#ffffff"><title>{escape(f"{STAGE_LABELS[stage]}: {n}")}</title></rect>'
        )
        if w >= 18:
            body.append(_text(x + w / 2, bar_y + 17, str(n), fill=ink, bold=True))
        x += w
    # legend, in the same order as the segments
    lx, ly = float(left), bar_y + bar_h + 18
    for stage, n in counts.items():
        label = f"{STAGE_LABELS[stage]} {n}"
        item_w = 16 + 6.2 * len(label) + 12
        if lx + item_w > width:
            lx, ly = float(left), ly + 16
        fill, _ = STAGE_COLOURS[stage]
        body.append(
            f'<rect x="{lx:.1f}" y="{ly - 9}" width="10" height="10" fill="{fill}" '
            'stroke="#57606a" stroke-width="0.5"/>'
        )
        body.append(_text(lx + 14, ly, label, size=10, anchor="start"))
        lx += item_w
    return _svg(width, int(ly + 10), title, "; ".join(described), body)


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


def latency_histogram(
    variant: str,
    values: Sequence[float],
    edges: Sequence[float],
    *,
    max_count: int,
    mean: float | None,
    p95: float | None,
    colour: str = VARIANT_COLOURS[0],
    width: int = 460,
) -> SafeString:
    """elapsed_ms of one variant's answers on the shared bins, with the mean and p95 marked."""
    counts = bin_counts(values, edges)
    left, top, plot_h = 8, 54, 80
    plot_w = width - 2 * left
    base = top + plot_h
    span = edges[-1] - edges[0] or 1
    title = f"Latency, {variant}: {len(values)} answers"
    body = [_text(left, 16, title, size=12, anchor="start", bold=True)]
    bin_w = plot_w / len(counts)
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
        body.append(_text(x + bin_w / 2, base - h - 3, str(n), size=10))
    body.append(f'<line x1="{left}" y1="{base}" x2="{width - left}" y2="{base}" stroke="#b4bbc5"/>')
    body.append(_text(left, base + 14, "0 ms", size=10, anchor="start", fill="#57606a"))
    body.append(
        _text(left + plot_w / 2, base + 14, f"{edges[-1] / 2:.0f}", size=10, fill="#57606a")
    )
    body.append(
        _text(width - left, base + 14, f"{edges[-1]:.0f} ms", size=10, anchor="end", fill="#57606a")
    )
    marks = []
    # The mean's label reads to the left of its line and p95's to the right, so the two
    # never overprint however close they are; a label that would leave the chart drops to a
    # second row on the other side of its line.
    for name, value, dash, anchor, shift in (
        ("mean", mean, "4 2", "end", -3),
        ("p95", p95, "1 2", "start", 3),
    ):
        if value is None:
            continue
        x = left + plot_w * (value - edges[0]) / span
        label = f"{name} {value:.0f}"
        y = top - 26
        room = (width - left - x) if anchor == "start" else (x - left)
        if room < 6 * len(label):
            anchor, shift, y = (
                ("end", -3, top - 14) if anchor == "start" else ("start", 3, top - 14)
            )
        body.append(
            f'<line x1="{x:.1f}" y1="{top - 24}" x2="{x:.1f}" y2="{base}" stroke="#1f2328" '
            f'stroke-dasharray="{dash}"/>'
        )
        body.append(_text(x + shift, y, label, size=10, anchor=anchor))
        marks.append(f"{name} {value:.0f} ms")
    desc = ", ".join(
        [f"{edges[i]:.0f} to {edges[i + 1]:.0f} ms: {n}" for i, n in enumerate(counts) if n] + marks
    )
    return _svg(width, base + 20, title, desc or "no latency recorded", body)
