"""The report charts as SVG: intervals on every rate bar, small samples marked, labels wrapped
but never cut, and chart labels that never overprint one another. Pure, no database."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from evaluation.caveats import one_label_reason
from evaluation.intervals import wilson_interval
from evaluation.reports import charts

NS = {"svg": "http://www.w3.org/2000/svg"}


def parse(svg) -> ET.Element:
    return ET.fromstring(str(svg))


def texts(root) -> list[ET.Element]:
    return root.findall(".//svg:text", NS)


def box(element) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of a text element, measured as the charts measure it."""
    size = float(element.get("font-size"))
    width = charts.text_width(element.text or "", size, bold=element.get("font-weight") == "600")
    x, y = float(element.get("x")), float(element.get("y"))
    anchor = element.get("text-anchor")
    x0 = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
    return x0, y - size * 0.8, x0 + width, y + size * 0.2


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def assert_inside_and_apart(root):
    width = float(root.get("width"))
    boxes = [(t.text, box(t)) for t in texts(root)]
    for text, (x0, _, x1, _) in boxes:
        assert x0 >= -0.5 and x1 <= width + 0.5, f"{text!r} leaves the chart"
    for i, (text, a) in enumerate(boxes):
        for other, b in boxes[i + 1 :]:
            assert not overlap(a, b), f"{text!r} overprints {other!r}"


LONG = "gpt4o-mini@2024-07-18/prompt_v3-with-reranker"


def faithfulness_chart():
    return charts.bar_chart(
        "Claim faithfulness",
        [
            charts.Bar("baseline", 1.0, 2, charts.variant_colour(0), wilson_interval(2, 2)),
            charts.Bar("verifier", 0.75, 40, charts.variant_colour(1), wilson_interval(30, 40)),
            charts.Bar(LONG, 0.5, 300, charts.variant_colour(2), wilson_interval(150, 300)),
            charts.Bar("empty", None, 0, charts.variant_colour(3)),
        ],
    )


def test_every_rate_bar_carries_its_interval_and_says_it_in_words():
    root = parse(faithfulness_chart())
    whiskers = [p for p in root.findall("svg:path", NS) if p.get("stroke") == charts.INK]
    assert len(whiskers) == 3  # one per defined bar, none for "n/a"
    desc = root.find("svg:desc", NS).text
    assert "baseline: 1.00, 95% interval [0.34, 1.00], n=2, small sample" in desc
    assert "verifier: 0.75, 95% interval [0.60, 0.86], n=40" in desc
    assert "empty: undefined (n=0)" in desc


def test_a_bar_over_a_small_sample_is_hatched_and_labelled():
    root = parse(faithfulness_chart())
    rects = root.findall("svg:rect", NS)
    hatched = [r for r in rects if r.get("fill", "").startswith("url(#")]
    assert len(hatched) == 1 and "1.00" in hatched[0].find("svg:title", NS).text
    pattern_id = re.search(r"url\(#(.+)\)", hatched[0].get("fill")).group(1)
    assert root.find(f".//svg:pattern[@id='{pattern_id}']", NS) is not None
    assert [t.text for t in texts(root)].count("small n") == 1


def test_variant_names_wrap_but_are_never_cut_short():
    root = parse(faithfulness_chart())
    shown = "".join(t.text for t in texts(root))
    assert LONG.replace(" ", "") in shown.replace(" ", "")  # every character, in order
    assert "…" not in shown
    assert_inside_and_apart(root)


def test_wrapping_breaks_at_punctuation_and_keeps_every_character():
    lines = charts.wrap_text("hybrid-rerank-k10-with-verifier", 60, 11)
    assert len(lines) > 1 and "".join(lines) == "hybrid-rerank-k10-with-verifier"
    assert all(charts.text_width(line, 11) <= 60 for line in lines)
    one_word = charts.wrap_text("x" * 40, 50, 11)
    assert "".join(one_word) == "x" * 40 and all(charts.text_width(w, 11) <= 50 for w in one_word)


@pytest.mark.parametrize(
    "values, mean, p95",
    [
        ([1200.0] * 50 + [1250.0] * 50, 1225.0, 1250.0),  # mean and p95 a pixel apart
        ([100.0, 100.0, 100.0, 100_000.0], 25_075.0, 100_000.0),  # p95 at the right edge
        ([5.0] * 10, 5.0, 5.0),  # both at the left edge, on the same spot
        ([100.0] * 99 + [1_000_000.0], 10_099.0, 100.0),  # an outlier: mean right of p95
    ],
)
def test_latency_labels_never_overlap_or_leave_the_chart(values, mean, p95):
    edges = charts.latency_bins(values)
    counts = charts.bin_counts(values, edges)
    svg = charts.latency_histogram("v", counts, edges, max_count=max(counts), mean=mean, p95=p95)
    root = parse(svg)
    assert_inside_and_apart(root)
    shown = [t.text for t in texts(root)]
    assert any(s.startswith("mean ") for s in shown) and any(s.startswith("p95 ") for s in shown)


def test_latency_counts_that_do_not_fit_their_bin_are_left_to_the_tooltip():
    values = [1000.0] * 2345 + [1010.0] * 2200 + [2000.0] * 3
    edges = charts.latency_bins(values)
    root = parse(
        charts.latency_histogram(
            "v",
            charts.bin_counts(values, edges),
            edges,
            max_count=4545,
            mean=1100.0,
            p95=1010.0,
            width=460,
        )
    )
    assert_inside_and_apart(root)
    assert "4.5k" in [t.text for t in texts(root)] or "4545" in root.find("svg:desc", NS).text


def test_interval_chart_says_why_a_value_is_undefined_and_marks_small_samples():
    rows = [
        charts.IntervalRow("Support", 0.62, (0.41, 0.8), 120),
        charts.IntervalRow("Severity", 0.1, (-0.3, 0.4), 12),
        charts.IntervalRow("Needs evidence", None, None, 8, undefined="undefined — one label"),
    ]
    root = parse(charts.interval_chart("Kappa", rows, low=charts.kappa_axis(rows)))
    desc = root.find("svg:desc", NS).text
    assert "Support: 0.62, 95% interval [0.41, 0.80], n=120" in desc
    assert "Severity: 0.10, 95% interval [-0.30, 0.40], n=12, small sample" in desc
    assert "Needs evidence: undefined (undefined — one label), n=8" in desc
    assert_inside_and_apart(root)
    hollow = [c for c in root.findall("svg:circle", NS) if c.get("fill") == "#ffffff"]
    assert len(hollow) == 1
    assert charts.kappa_axis(rows) == -0.5


def test_heatmap_shades_by_row_share_and_outlines_the_diagonal():
    root = parse(charts.heatmap("Confusion", ["supported", "contradicted"], [[9, 1], [0, 0]]))
    cells = root.findall("svg:rect", NS)
    assert len(cells) == 4
    assert cells[0].get("stroke") == charts.INK and cells[1].get("stroke") != charts.INK
    darkness = [sum(int(c.get("fill")[i : i + 2], 16) for i in (1, 3, 5)) for c in cells]
    assert darkness[0] < darkness[1] < darkness[3]
    assert cells[3].get("fill") == "#ffffff"  # an empty row has no share to shade
    assert "90% of the row" in cells[0].find("svg:title", NS).text


def test_one_label_reason_tells_which_reviewer_made_kappa_meaningless():
    labels = ["supported", "contradicted"]
    assert one_label_reason(labels, [[3, 2], [0, 0]]) == (
        "reviewer A used one label only (supported): kappa is 0 by formula whatever the "
        "other side did, and its interval cannot be estimated"
    )
    assert one_label_reason(labels, [[3, 0], [2, 0]]).startswith("reviewer B used one label")
    assert one_label_reason(labels, [[5, 0], [0, 0]]).startswith("reviewer A and reviewer B")
    assert one_label_reason(labels, [[3, 1], [1, 2]]) is None
    assert one_label_reason(labels, [[0, 0], [0, 0]]) is None


@pytest.mark.parametrize("width", [340, 560])
def test_interval_chart_labels_stay_clear_of_the_interval_lines(width):
    """#34: at 390 px the value labels were clipped, and at 1440 long row names ran into the
    interval lines. Names sit above their row, values to the right of the plot: no text box
    crosses an interval line or a dot, and every text stays inside the chart."""
    rows = [
        charts.IntervalRow(f"{LONG} against reviewer B, {name}", value, ci, 40)
        for name, value, ci in [
            ("support", 0.613, (-0.987, 0.999)),
            ("severity", -0.25, (-1.0, 0.5)),
            ("binary", 0.98, (0.9, 1.0)),
        ]
    ]
    root = parse(charts.interval_chart("Kappa", rows, low=-1.0, high=1.0, width=width))
    assert_inside_and_apart(root)
    marks = []
    for path in root.findall("svg:path", NS):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
        x_lo, cy, x_hi = numbers[0], numbers[1], numbers[2]
        marks.append((x_lo, cy - 5, x_hi, cy + 5))
    for circle in root.findall("svg:circle", NS):
        cx, cy = float(circle.get("cx")), float(circle.get("cy"))
        marks.append((cx - 4.5, cy - 4.5, cx + 4.5, cy + 4.5))
    assert len(marks) == 6
    for text in texts(root):
        for mark in marks:
            assert not overlap(box(text), mark), f"{text.text!r} runs into an interval"
