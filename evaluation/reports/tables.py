"""The evaluation report and the comparison as flat tables: the CSV downloads, the
``evaluate`` command's text output and the page's tables read the same Table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from annotate.models import failure_label_words
from evaluation.metrics import FAILURE_LABELS, P95_METHOD
from evaluation.reports.dataset import SLICES
from evaluation.reports.evaluation import RANKINGS, STAGE_SLICES


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"  # text, int, rate, float, ms, bool, json, ci, ids, answer_id(s)
    shown: str = "both"  # "csv": the download only; "people": the page and the command only

    @property
    def in_csv(self) -> bool:
        return self.shown != "people"

    @property
    def for_people(self) -> bool:
        return self.shown != "csv"


@dataclass
class Table:
    """Rows are dicts keyed by column key; ``group_by`` names a column whose value splits the
    table for people (one block per slice), while the CSV keeps it as a column."""

    name: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    group_by: str | None = None

    def csv_rows(self) -> Iterable[list[Any]]:
        columns = [c for c in self.columns if c.in_csv]
        yield [c.key for c in columns]
        for row in self.rows:
            yield [csv_value(row.get(c.key)) for c in columns]

    def groups(self) -> list[tuple[str | None, list[Column], list[list[Any]]]]:
        """(group value, columns, rows as value lists) for people."""
        columns = [c for c in self.columns if c.for_people and c.key != self.group_by]
        grouped: dict[str | None, list[list[Any]]] = {}
        for row in self.rows:
            key = row[self.group_by] if self.group_by else None
            grouped.setdefault(key, []).append([row.get(c.key) for c in columns])
        return [(key, columns, rows) for key, rows in grouped.items()] or [(None, columns, [])]


def _c(spec: str) -> list[Column]:
    """Columns from 'key:kind:Label' lines; a trailing '|csv' or '|people' limits where the
    column appears."""
    columns = []
    for line in spec.strip().splitlines():
        line, _, shown = line.strip().partition("|")
        key, kind, label = line.split(":", 2)
        columns.append(Column(key, label, kind, shown or "both"))
    return columns


RETRIEVAL_COLUMNS = """
    recall:rate:Recall@k
    precision:rate:Precision@k
    mrr:rate:MRR@k
    ndcg:rate:nDCG@k
    eligible:int:Eligible (n)
    not_eligible:int:Not eligible
    no_ranking:int:No ranking
"""


def report_tables(report: dict) -> dict[str, Table]:
    """Every table of the report, flat, from ``evaluate``'s result."""
    variants = report["variants"]
    per_slice = [(s, name, v) for s in SLICES for name, v in variants.items()]
    binary = report["label_schema"]["support"] == "binary"
    tables: dict[str, Table] = {}

    tables["retrieval"] = Table(
        "retrieval",
        "Retrieval (means over eligible cases)",
        _c("slice:text:Slice\nvariant:text:Variant\nranking:text:Ranking\nk:int:k")
        + _c(RETRIEVAL_COLUMNS),
        [
            {"slice": s, "variant": name, "ranking": ranking.replace("_", "-"), "k": int(k), **r}
            for s, name, v in per_slice
            if v["retrieval"] is not None
            for ranking in RANKINGS
            for k, r in v["retrieval"][s][ranking].items()
        ],
        group_by="slice",
    )

    rows = []
    for s, name, v in per_slice:
        g = v["generation"][s]
        f, p, c = g["faithfulness"], g.get("citation_precision"), g.get("citation_coverage")
        r, u, var = g.get("relevance"), g["unsupported_answers"], g["generation_variance"]
        common = {"slice": s, "variant": name}
        if binary:  # supported or unsupported: there is no subtype to decide
            subtypes = [f"unsupported {f['unsupported']}"]
        else:
            subtypes = [f"contradicted {f['contradicted']}", f"insufficient {f['insufficient']}"]
            if f["unsupported"] or not (f["contradicted"] or f["insufficient"]):
                subtypes.append(f"unsupported, subtype undecided {f['unsupported']}")
        rows.append(
            {
                **common,
                "metric": "faithfulness",
                "value": f["rate"],
                "count": f["supported"],
                "n": f["n"],
                "pending": f["pending"],
                "unlabelled": f["unlabelled"],
                "detail": ", ".join(subtypes),
            }
        )
        optional = [
            {
                **common,
                "metric": "citation precision",
                "value": p["rate"],
                "count": p["supports"],
                "n": p["links"],
                "pending": p["pending"],
                "detail": f"does not support {p['does_not_support']}, not found {p['not_found']}",
            }
            if p is not None
            else None,
            {
                **common,
                "metric": "citation coverage",
                "value": c["rate"],
                "count": c["covered"],
                "n": c["requiring_evidence"],
                "pending": c["pending"],
                "detail": f"not requiring evidence {c['not_requiring_evidence']}",
            }
            if c is not None
            else None,
            {
                **common,
                "metric": "relevance (mean 0-2)",
                "value": r["mean"],
                "n": r["n"],
                "pending": r["pending"],
                "unlabelled": g["unlabelled"],
                "detail": " · ".join(f"{k}: {n}" for k, n in r["counts"].items()),
            }
            if r is not None
            else None,
        ]
        rows += [row for row in optional if row is not None]
        rows += [
            {
                **common,
                "metric": "unsupported answers",
                "value": u["rate"],
                "count": u["unsupported"],
                "n": u["n"],
                "pending": u["pending"],
                "unlabelled": u["unlabelled"],
                "detail": "answers with a claim decided unsupported",
            },
        ]
        if var is not None:
            rows.append(
                {
                    **common,
                    "metric": "generation variance",
                    "value": var["rate"],
                    "count": var["differing"],
                    "n": var["repeated"],
                    "detail": f"cases whose samples differ; single-sample cases "
                    f"{var['single_sample']}",
                }
            )
    tables["generation"] = Table(
        "generation",
        "Generation (gold labels: agreed or adjudicated only)",
        _c("""
            slice:text:Slice
            variant:text:Variant
            metric:text:Metric
            value:rate:Value
            count:int:Count
            n:int:n
            pending:int:Pending
            unlabelled:int:Unlabelled
            detail:text:Detail
        """),
        rows,
        group_by="slice",
    )

    tables["abstention"] = Table(
        "abstention",
        "Abstention",
        _c("""
            slice:text:Slice
            variant:text:Variant
            unanswerable:int:Unanswerable n
            abstained:int:Abstained
            abstention_rate:rate:share
            unsupported:int:Unsupported
            unsupported_rate:rate:share
            answered_supported:int:Answered ok
            pending:int:Pending
            answerable:int:Answerable n
            false_abstentions:int:False abst.
            false_abstention_rate:rate:share
            gold_appropriate:int:Gold appropriate
            gold_unnecessary:int:Gold unnecessary
        """),
        [
            {
                "slice": s,
                "variant": name,
                **{k: val for k, val in ab.items() if k != "gold"},
                "gold_appropriate": ab["gold"]["appropriate"] if "gold" in ab else None,
                "gold_unnecessary": ab["gold"]["unnecessary"] if "gold" in ab else None,
            }
            for s, name, v in per_slice
            for ab in [v["generation"][s]["abstention"]]
        ],
        group_by="slice",
    )

    tables["failure_labels"] = Table(
        "failure_labels",
        "Failure labels (answers carrying each label)",
        _c("slice:text:Slice\nvariant:text:Variant\nanswers:int:Answers (n)")
        + [Column(label, failure_label_words(label), "int") for label in FAILURE_LABELS]
        + [Column("pending", "Pending", "int")],
        [
            {"slice": s, "variant": name, **fl["counts"], **fl}
            for s, name, v in per_slice
            if "failure_labels" in v["generation"][s]
            for fl in [v["generation"][s]["failure_labels"]]
        ],
        group_by="slice",
    )

    tables["stages"] = Table(
        "stages",
        "Stage diagnosis (answers of answerable cases)",
        _c("""
            slice:text:Slice
            variant:text:Variant
            stage:text:Stage
            answers:int:Answers
            n:int:of n
            cases:int:Cases
            case_ids:ids:Case ids
            answer_ids:answer_ids:Answer ids
        """),
        [
            {"slice": s, "variant": name, "stage": stage, "n": block["answers"], **row}
            for s in STAGE_SLICES
            for name, v in variants.items()
            if v["stages"] is not None
            for block in [v["stages"][s]]
            for stage, row in block["rows"].items()
        ],
        group_by="slice",
    )

    tables["diagnosis"] = Table(
        "diagnosis",
        "Diagnosis per answer",
        _c("""
            variant:text:Variant
            answer_id:answer_id:Answer
            case_id:text:Case
            sample:int:Sample
            stage:text:Stage
            adversarial:bool:Adversarial
            split:text:Split
        """),
        [{"variant": name, **d} for name, v in variants.items() for d in v["diagnosis"]],
    )

    tables["latency"] = Table(
        "latency",
        f"Latency and cost (p95: {P95_METHOD})",
        _c("""
            slice:text:Slice
            variant:text:Variant
            n:int:n
            missing:int:Missing
            mean:ms:Mean (ms)
            p95:ms:p95 (ms)
            cost_n:int:Cost n
            cost_total:float:Cost total
            cost_mean:float:Cost mean
        """),
        [
            {
                "slice": s,
                "variant": name,
                **g["latency"],
                "cost_n": g["cost"]["n"],
                "cost_total": g["cost"]["total"],
                "cost_mean": g["cost"]["mean"],
            }
            for s, name, v in per_slice
            for g in [v["generation"][s]]
        ],
        group_by="slice",
    )
    return tables


def limits_table(report: dict, limits: list[dict]) -> Table:
    """The variants with their settings and whether they meet the limits the lead set."""
    variants = report["variants"]
    return Table(
        "variants",
        "Variants, their settings and the limits",
        _c("""
            variant:text:Variant
            model:text:Model
            settings:json:Settings
            answers:int:Answers
            latency_mean_ms:ms:Mean ms
            latency_n:int:n
            unsupported_rate:rate:Unsupported
            unsupported:int:count
            unsupported_n:int:of n
            meets_latency:bool:Budget
            meets_unsupported:bool:Limit
            meets_both:bool:Meets
        """),
        [
            {
                **row,
                "model": variants[row["variant"]]["model"],
                "settings": variants[row["variant"]]["settings"],
                "answers": variants[row["variant"]]["answers"],
            }
            for row in limits
        ],
    )


def comparison_tables(comparison: dict) -> dict[str, Table]:
    """The paired comparison, its case-by-case transitions and the fusion what-if."""
    a, b, k = comparison["a"], comparison["b"], comparison["k"]
    rows, transitions = [], []
    for metric, m in comparison["metrics"].items():
        ci = m["diff"]["ci95"] or [None, None]
        rows.append(
            {
                "metric": metric,
                "pass_rule": m["pass_rule"],
                **m["counts"],
                "mean_a": m["mean_a"],
                "mean_b": m["mean_b"],
                "mean_diff": m["diff"]["mean_diff"],
                "ci95": m["diff"]["ci95"],
                "ci_low": ci[0],
                "ci_high": ci[1],
            }
        )
        transitions += [
            {"metric": metric, "transition": kind, "cases": len(ids), "case_ids": ids}
            for kind, ids in m["transitions"].items()
        ]
    latency = comparison["latency_added_ms"]
    ci = latency["ci95"] or [None, None]
    rows.append(
        {
            "metric": "latency_ms",
            "pass_rule": "latency added: mean paired difference (b − a), in ms",
            "paired": latency["n"],
            "mean_diff": latency["mean_diff"],
            "ci95": latency["ci95"],
            "ci_low": ci[0],
            "ci_high": ci[1],
        }
    )
    return {
        "comparison": Table(
            "comparison",
            f"a = {a} → b = {b}, cases paired by case id (k = {k}; 95% bootstrap interval, "
            f"seed {comparison['seed']})",
            _c("""
                metric:text:Metric
                pass_rule:text:Pass rule|csv
                paired:int:Paired n
                fixed:int:Fixed
                broken:int:Broken
                unchanged_pass:int:Same pass
                unchanged_fail:int:Same fail
                only_a:int:Only a
                only_b:int:Only b
                mean_a:rate:Mean a
                mean_b:rate:Mean b
                mean_diff:diff:b − a
                ci95:ci:95% CI|people
                ci_low:diff:CI low|csv
                ci_high:diff:CI high|csv
            """),
            rows,
        ),
        "fusion": Table(
            "fusion",
            f"What if: both rankings fused by reciprocal rank fusion (full ranking, k = {k})",
            _c("ranking:text:Ranking") + _c(RETRIEVAL_COLUMNS),
            [{"ranking": name, **r} for name, r in comparison["fusion"]["rows"].items()],
        ),
        "transitions": Table(
            "transitions",
            f"Transitions {a} → {b}, case by case",
            _c("""
                metric:text:Metric
                transition:text:Transition
                cases:int:Cases
                case_ids:ids:Case ids
            """),
            transitions,
        ),
    }


def csv_value(value: Any) -> Any:
    """A cell for CSV: lists joined by ';', mappings as JSON, None empty, floats unrounded."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ";".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def text_value(value: Any, kind: str) -> str:
    """A cell for people: rates to 3 decimals, milliseconds whole, None as '—'."""
    if value is None:
        return "—"
    if kind == "bool":
        return "yes" if value else "no"
    if kind in ("ids", "answer_ids"):
        return ", ".join(value) if value else "—"
    if kind == "json":  # as the bundle wrote them: reranker=null, verifier=false
        shown = (
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
            for k, v in value.items()
        )
        return ", ".join(shown) if value else "—"
    if kind == "ci":
        return f"[{text_value(value[0], 'diff')}, {text_value(value[1], 'diff')}]"
    if kind == "rate":
        return f"{value:.3f}"
    if kind == "ms":
        return f"{value:.0f}"
    if kind == "diff":  # differences and intervals: three decimals like the rates beside them
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if kind == "float":  # costs and the like: small values keep their digits
        return f"{value:.4g}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)
