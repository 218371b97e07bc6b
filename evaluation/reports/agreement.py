"""The agreement report: the two reviewers' labels aligned item by item, then the pure
statistics of evaluation.agreement per field, per slice and per reviewer pair.

Claims are aligned by one SQL query (a window function picks each answer's first two
submitted label sets, a self-join pairs their claim labels), so the report over 100,000
doubly-labelled claims is one round trip plus vectorised statistics. Where some answer has
more than two label sets, every label set counts as well (evaluation.reports.label_sets):
alpha and Fleiss' kappa beside each field, and every pair of reviewers in `pairs`.

The fields follow the project's label schema: `support` on its scale (three-way or binary),
`support_binary` always (unsupported = contradicted or insufficient evidence), and the other
fields only where the schema labels them. A field that is off is absent from the report.

Gold imported from elsewhere (one label per item) never enters: agreement needs two people.
The report says how many gold items came that way with no second reviewer
(`gold_without_second_reviewer`), beside the figures they are not part of.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection

from annotate.gold.imported import imported_alone
from annotate.models import Answer, Assignment, Case, ClaimLabel, Project
from annotate.schema import LabelSchema, support_binary
from evaluation.agreement import (
    ABSTENTION,
    CITATION,
    FIELDS,
    RELEVANCE,
    REQUIRES_EVIDENCE,
    SEVERITY,
    SUPPORT,
    SUPPORT_BINARY,
    evidence_overlap,
    field_agreement_encoded,
    kappa_from_confusion,
)
from evaluation.reports import label_sets
from evaluation.reports.dataset import AGREEMENT_SLICES as SLICES

CLAIM_REPORT_FIELDS = ("support", "support_binary", "severity", "requires_evidence", "citation")
ANSWER_REPORT_FIELDS = ("relevance", "abstention")
# The schema field each report field belongs to.
_SCHEMA_FIELD = {"citation": "citations"}
LABELS = {
    "support": SUPPORT,
    "support_binary": SUPPORT_BINARY,
    "severity": SEVERITY,
    "requires_evidence": REQUIRES_EVIDENCE,
    "citation": CITATION,
    "relevance": RELEVANCE,
    "abstention": ABSTENTION,
}


class Aligned:
    """Aligned labels of one field, encoded: item i was labelled a[i] by reviewer A and b[i]
    by reviewer B (positions in the field's label list). Built row by row, then frozen into
    numpy arrays so slices and pairs are boolean masks."""

    def __init__(self, labels) -> None:
        self.labels = tuple(labels)
        self._code = {label: i for i, label in enumerate(self.labels)}
        self._rows: list[tuple] = []

    def add(self, a, b, group: int, answerable: bool, adversarial: bool, pair) -> None:
        code_a, code_b = self._code.get(a), self._code.get(b)
        if code_a is None or code_b is None:
            return  # an incomplete label (never submitted that way) is no item of agreement
        low, high = sorted(pair)
        self._rows.append((code_a, code_b, group, answerable, adversarial, low, high))

    @classmethod
    def from_arrays(cls, labels, a, b, groups, answerable, adversarial, low, high) -> Aligned:
        """Already encoded columns (code -1: no label, left out)."""
        keep = (a >= 0) & (b >= 0)
        aligned = cls(labels)
        aligned.a, aligned.b, aligned.groups = a[keep], b[keep], groups[keep]
        aligned.answerable, aligned.adversarial = answerable[keep], adversarial[keep]
        aligned.pair_low, aligned.pair_high = low[keep], high[keep]
        del aligned._rows
        return aligned

    def freeze(self) -> None:
        rows = np.array(self._rows, dtype=np.int64).reshape(-1, 7)
        self.a, self.b, self.groups = rows[:, 0], rows[:, 1], rows[:, 2]
        self.answerable, self.adversarial = rows[:, 3].astype(bool), rows[:, 4].astype(bool)
        self.pair_low, self.pair_high = rows[:, 5], rows[:, 6]
        del self._rows

    def slice_mask(self, name: str) -> np.ndarray:
        return {
            "all": np.ones(len(self.a), dtype=bool),
            "answerable": self.answerable,
            "unanswerable": ~self.answerable,
            "adversarial": self.adversarial,
        }[name]

    def pairs(self) -> set[tuple[int, int]]:
        return set(zip(self.pair_low.tolist(), self.pair_high.tolist(), strict=True))

    def pair_mask(self, pair: tuple[int, int]) -> np.ndarray:
        return (self.pair_low == pair[0]) & (self.pair_high == pair[1])


class EvidenceSets:
    """The evidence passages each reviewer chose, per claim, with the claim's slice flags."""

    def __init__(self) -> None:
        self.a: list[frozenset] = []
        self.b: list[frozenset] = []
        self.flags: list[tuple[bool, bool]] = []
        # Claims where neither reviewer named a passage, by (answerable, adversarial): counted,
        # never scored, and not fetched one by one.
        self.neither: Counter = Counter()

    def add(self, a, b, answerable: bool, adversarial: bool) -> None:
        self.a.append(a)
        self.b.append(b)
        self.flags.append((answerable, adversarial))

    def in_slice(self, name: str) -> tuple[list, list]:
        keep = {
            "all": lambda f: True,
            "answerable": lambda f: f[0],
            "unanswerable": lambda f: not f[0],
            "adversarial": lambda f: f[1],
        }[name]
        idx = [i for i, f in enumerate(self.flags) if keep(f)]
        return [self.a[i] for i in idx], [self.b[i] for i in idx]

    def neither_in(self, name: str) -> int:
        return sum(
            n
            for (answerable, adversarial), n in self.neither.items()
            if name == "all"
            or (name == "answerable" and answerable)
            or (name == "unanswerable" and not answerable)
            or (name == "adversarial" and adversarial)
        )


def _first_two_sql(guideline_version: int | None = None) -> str:
    """Each answer's first two submitted assignments, numbered 1 and 2; a gold check's label
    set is never one (annotate.checks). With `guideline_version`, of those made under it only
    (an int() in the SQL: every caller's parameters stay)."""
    assignment = Assignment._meta.db_table
    version = (
        "" if guideline_version is None else f"AND guideline_version = {int(guideline_version)}"
    )
    return f"""
        SELECT id, answer_id, reviewer_id,
               ROW_NUMBER() OVER (PARTITION BY answer_id ORDER BY submitted_at, id) AS side
        FROM "{assignment}"
        WHERE project_id = %s AND status = 'submitted' AND NOT is_check {version}
    """


_EMPTY = {"{}": {}, "[]": []}


@lru_cache(maxsize=1 << 16)
def _decode(text: str):
    return json.loads(text)


def _json(value):
    """JSON columns arrive as text through a raw cursor. Most are empty or repeat (the two
    reviewers' citations agree more often than not), so decoding is cached; decoding 400,000
    of them one by one was most of the report's time. Callers never mutate the result."""
    if not isinstance(value, str):
        return value
    empty = _EMPTY.get(value)
    return empty if empty is not None else _decode(value)


def claim_report_fields(schema: LabelSchema) -> tuple[str, ...]:
    """support and support_binary always; the others where the schema labels them."""
    return tuple(
        f
        for f in CLAIM_REPORT_FIELDS
        if f == "support_binary" or schema.claim(_SCHEMA_FIELD.get(f, f))
    )


def answer_report_fields(schema: LabelSchema) -> tuple[str, ...]:
    return tuple(f for f in ANSWER_REPORT_FIELDS if schema.answer(f))


def _labels(name: str, schema: LabelSchema) -> tuple:
    return schema.support_labels if name == "support" else LABELS[name]


def aligned_claims(
    project: Project, *, guideline_version: int | None = None
) -> tuple[dict[str, Aligned], EvidenceSets]:
    """Claim-level fields of the project's schema, aligned.

    The database encodes the labels (CASE ... THEN position), so the main query returns
    integers only and becomes numpy arrays in one step: a loop in Python over 100,000 rows was
    most of the report's time. Citations and evidence, JSON lists and maps, come from two
    smaller queries that skip the pairs where both sides are empty, and only when the schema
    labels them. `guideline_version`: the label sets made under it only."""
    schema = project.schema
    fields = claim_report_fields(schema)
    firsts = _first_two_sql(guideline_version)
    label, answer, case = ClaimLabel._meta.db_table, Answer._meta.db_table, Case._meta.db_table
    support_labels = schema.support_labels
    params: list = []

    def code(column: str, labels) -> str:
        cases = " ".join("WHEN %s THEN " + str(i) for i in range(len(labels)))
        params.extend(labels)
        return f"CASE {column} {cases} ELSE -1 END"

    joins = f"""
        FROM firsts fa
        JOIN firsts fb ON fb.answer_id = fa.answer_id AND fb.side = 2
        JOIN "{label}" la ON la.assignment_id = fa.id
        JOIN "{label}" lb ON lb.assignment_id = fb.id AND lb.claim_id = la.claim_id
        JOIN "{answer}" an ON an.id = fa.answer_id
        JOIN "{case}" c ON c.id = an.case_id
        WHERE fa.side = 1
    """
    columns = ", ".join(
        [
            code("la.support", support_labels),
            code("lb.support", support_labels),
            code("la.severity", SEVERITY),
            code("lb.severity", SEVERITY),
        ]
    )
    sql = f"""
        WITH firsts AS ({firsts})
        SELECT fa.answer_id, fa.reviewer_id, fb.reviewer_id,
               CASE WHEN c.answerable THEN 1 ELSE 0 END,
               CASE WHEN c.adversarial THEN 1 ELSE 0 END,
               {columns},
               CASE WHEN la.requires_evidence THEN 0 ELSE 1 END,
               CASE WHEN lb.requires_evidence THEN 0 ELSE 1 END
        {joins}
        ORDER BY fa.answer_id, la.claim_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk, *params])
        rows = np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, 11)
    answer_ids, ra, rb = rows[:, 0], rows[:, 1], rows[:, 2]
    answerable, adversarial = rows[:, 3].astype(bool), rows[:, 4].astype(bool)
    low, high = np.minimum(ra, rb), np.maximum(ra, rb)
    # support_binary from the support codes: position 0 is "supported" on either scale.
    binary = np.where(rows[:, 5:7] < 0, -1, (rows[:, 5:7] > 0).astype(np.int64))
    encoded = {
        "support": (rows[:, 5], rows[:, 6]),
        "support_binary": (binary[:, 0], binary[:, 1]),
        "severity": (rows[:, 7], rows[:, 8]),
        # REQUIRES_EVIDENCE is (True, False): true is position 0
        "requires_evidence": (rows[:, 9], rows[:, 10]),
    }
    out = {
        name: Aligned.from_arrays(
            _labels(name, schema),
            a,
            b,
            answer_ids,
            answerable,
            adversarial,
            low,
            high,
        )
        for name, (a, b) in encoded.items()
    }
    out["citation"] = _aligned_citations(project, joins, firsts) if "citation" in fields else None
    evidence = (
        _evidence_sets(project, joins, firsts) if schema.claim("evidence") else EvidenceSets()
    )
    return {name: out[name] for name in fields}, evidence


def _aligned_citations(project: Project, joins: str, firsts: str) -> Aligned:
    """Each citation both reviewers judged, as one item."""
    aligned = Aligned(CITATION)
    sql = f"""
        WITH firsts AS ({firsts})
        SELECT fa.answer_id, fa.reviewer_id, fb.reviewer_id, c.answerable, c.adversarial,
               la.citations, lb.citations
        {joins} AND {_not_empty("la.citations", "{}")} AND {_not_empty("lb.citations", "{}")}
        ORDER BY fa.answer_id, la.claim_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for answer_id, ra, rb, answerable, adversarial, ca, cb in cursor.fetchall():
            ca, cb = _json(ca) or {}, _json(cb) or {}
            for cited in sorted(ca.keys() & cb.keys()):
                aligned.add(
                    ca[cited], cb[cited], answer_id, bool(answerable), bool(adversarial), (ra, rb)
                )
    aligned.freeze()
    return aligned


def _evidence_sets(project: Project, joins: str, firsts: str) -> EvidenceSets:
    """The passages each reviewer chose, for the claims where either chose one; the others
    are counted (`neither`), as evidence_overlap would."""
    evidence = EvidenceSets()
    both_empty = f"{_is_empty('la.evidence_ids', '[]')} AND {_is_empty('lb.evidence_ids', '[]')}"
    sql = f"""
        WITH firsts AS ({firsts})
        SELECT c.answerable, c.adversarial, la.evidence_ids, lb.evidence_ids
        {joins} AND NOT ({both_empty})
        ORDER BY fa.answer_id, la.claim_id
    """
    counts = f"""
        WITH firsts AS ({firsts})
        SELECT c.answerable, c.adversarial, COUNT(*)
        {joins} AND {both_empty}
        GROUP BY c.answerable, c.adversarial
    """
    with connection.cursor() as cursor:
        cursor.execute(counts, [project.pk])
        for answerable, adversarial, n in cursor.fetchall():
            evidence.neither[(bool(answerable), bool(adversarial))] += n
        cursor.execute(sql, [project.pk])
        for answerable, adversarial, ia, ib in cursor.fetchall():
            evidence.add(
                frozenset(_json(ia) or ()),
                frozenset(_json(ib) or ()),
                bool(answerable),
                bool(adversarial),
            )
    return evidence


def _not_empty(column: str, empty: str) -> str:
    """SQL: a JSON column that is not the empty map or list (jsonb on PostgreSQL, text on
    SQLite)."""
    if connection.vendor == "postgresql":
        return f"{column} <> '{empty}'::jsonb"
    return f"{column} <> '{empty}'"


def _is_empty(column: str, empty: str) -> str:
    if connection.vendor == "postgresql":
        return f"{column} = '{empty}'::jsonb"
    return f"{column} = '{empty}'"


def aligned_answers(
    project: Project, *, guideline_version: int | None = None
) -> dict[str, Aligned]:
    """Answer-level fields of the project's schema, aligned. One query. Abstention counts only
    answers that declined (where both reviewers gave a verdict). `guideline_version`: the
    label sets made under it only."""
    fields = answer_report_fields(project.schema)
    assignment, answer, case = Assignment._meta.db_table, Answer._meta.db_table, Case._meta.db_table
    sql = f"""
        WITH firsts AS ({_first_two_sql(guideline_version)})
        SELECT fa.answer_id, fa.reviewer_id, fb.reviewer_id, c.answerable, c.adversarial,
               aa.relevance, ab.relevance, aa.abstention, ab.abstention
        FROM firsts fa
        JOIN firsts fb ON fb.answer_id = fa.answer_id AND fb.side = 2
        JOIN "{assignment}" aa ON aa.id = fa.id
        JOIN "{assignment}" ab ON ab.id = fb.id
        JOIN "{answer}" an ON an.id = fa.answer_id
        JOIN "{case}" c ON c.id = an.case_id
        WHERE fa.side = 1
        ORDER BY fa.answer_id
    """
    out = {name: Aligned(LABELS[name]) for name in ANSWER_REPORT_FIELDS}
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for answer_id, ra, rb, answerable, adversarial, rel_a, rel_b, abs_a, abs_b in cursor:
            flags, pair = (bool(answerable), bool(adversarial)), (ra, rb)
            out["relevance"].add(rel_a, rel_b, answer_id, *flags, pair)
            if abs_a and abs_b:
                out["abstention"].add(abs_a, abs_b, answer_id, *flags, pair)
    for aligned in out.values():
        aligned.freeze()
    return {name: out[name] for name in fields}


def _field_report(name: str, data: Aligned, mask, *, n_boot: int, seed: int) -> dict:
    # Fields share their weighting by name; support's labels are the project's scale.
    result = field_agreement_encoded(
        data.a[mask],
        data.b[mask],
        labels=data.labels,
        weights=FIELDS[name].weights,
        group_idx=data.groups[mask],
        n_boot=n_boot,
        seed=seed,
    )
    return result.as_dict()


def agreement_report(
    project: Project, *, n_boot: int = 1000, seed: int = 0, guideline_version: int | None = None
) -> dict:
    """The `agreement --json` shape of SPEC.md, plus evidence overlap per slice (where the
    project labels evidence). Fields outside the project's label schema are absent. With
    `guideline_version`, over the label sets made under that version of the guidelines only
    (an answer counts where two of them are)."""
    schema = project.schema
    claims, evidence = aligned_claims(project, guideline_version=guideline_version)
    aligned = {**claims, **aligned_answers(project, guideline_version=guideline_version)}
    fields = tuple(aligned)
    report: dict = {
        "project": project.slug,
        "guideline_version": guideline_version,
        "slices": {},
        "pairs": [],
        "gold_without_second_reviewer": imported_alone(project).as_dict(),
    }
    for slice_name in SLICES:
        section = {
            name: _field_report(
                name, aligned[name], aligned[name].slice_mask(slice_name), n_boot=n_boot, seed=seed
            )
            for name in fields
        }
        if schema.claim("evidence"):
            overlap = evidence_overlap(*evidence.in_slice(slice_name)).as_dict()
            overlap["neither"] += evidence.neither_in(slice_name)
            section["evidence"] = overlap
        report["slices"][slice_name] = section
    if label_sets.more_than_two(project, guideline_version=guideline_version):
        _every_label_set(
            project, report, fields, n_boot=n_boot, seed=seed, guideline_version=guideline_version
        )
        return report
    pairs = set().union(*(d.pairs() for d in aligned.values()))
    names = _usernames({r for pair in pairs for r in pair})
    shared = shared_items(project, guideline_version=guideline_version)
    for pair in sorted(pairs, key=lambda p: (names[p[0]], names[p[1]])):
        entry = {"reviewers": [names[pair[0]], names[pair[1]]]}
        entry.update(_identity(entry["reviewers"], shared.get(pair), schema))
        for name in fields:
            mask = aligned[name].pair_mask(pair)
            # With one pair (the usual case) its items are exactly the "all" slice.
            entry[name] = (
                report["slices"]["all"][name]
                if mask.all()
                else _field_report(name, aligned[name], mask, n_boot=n_boot, seed=seed)
            )
        report["pairs"].append(entry)
    report["identical_label_sets"] = any(p["identical_label_sets"] for p in report["pairs"])
    return report


def _every_label_set(
    project: Project,
    report: dict,
    fields,
    *,
    n_boot: int,
    seed: int,
    guideline_version: int | None = None,
) -> None:
    """With more than two label sets on some answer (SPEC.md "More than two reviewers"): each
    slice's fields also carry alpha over every label set, and Fleiss' kappa for the nominal
    ones (label_sets.every_label_set); `pairs` holds every pair of reviewers who share an
    item, each field's Cohen's kappa over all the items both labelled (the slices' n, raw
    agreement and kappa stay those of each answer's first two label sets). Pairs in their
    names' order."""
    schema = project.schema
    labels_of = {name: _labels(name, schema) for name in LABELS}
    every = label_sets.every_label_set(
        project,
        fields,
        labels_of,
        slices=SLICES,
        n_boot=n_boot,
        seed=seed,
        guideline_version=guideline_version,
    )
    for slice_name, section in every.slices.items():
        for name, keys in section.items():
            report["slices"][slice_name][name] = {**report["slices"][slice_name][name], **keys}
    shared = shared_items(project, every_pair=True, guideline_version=guideline_version)
    found = sorted({pair for by_pair in every.pairs.values() for pair in by_pair})
    for a, b in found:
        entry = {"reviewers": [a, b]}
        ids = (every.ids[a], every.ids[b])
        entry.update(_identity(entry["reviewers"], shared.get((min(ids), max(ids))), schema))
        for name in fields:
            pair = every.pairs[name].get((a, b))
            entry[name] = (
                pair.as_dict() if pair is not None else label_sets.no_items(name, labels_of[name])
            )
        report["pairs"].append(entry)
    report["identical_label_sets"] = any(p["identical_label_sets"] for p in report["pairs"])


# --- One label set under two names -----------------------------------------------------------

# Every label a reviewer gives a claim or an answer (notes aside: two people often leave them
# empty alike).
CLAIM_LABEL_COLUMNS = (
    "support",
    "severity",
    "requires_evidence",
    "evidence_ids",
    "evidence_quote",
    "citations",
)
ANSWER_LABEL_COLUMNS = ("relevance", "abstention", "failure_labels")


def shared_items(
    project: Project, *, every_pair: bool = False, guideline_version: int | None = None
) -> dict[tuple[int, int], dict[str, int]]:
    """Per reviewer pair (lower id first): the claims and answers both labelled, and how many
    of them differ in any label field; of each answer's first two label sets, or with
    `every_pair` of every two of its label sets (more than two reviewers). Fields the schema
    leaves out are empty on both sides, so they never differ. Two grouped queries."""
    label, assignment = ClaimLabel._meta.db_table, Assignment._meta.db_table
    claims = f"""
        JOIN "{label}" la ON la.assignment_id = fa.id
        JOIN "{label}" lb ON lb.assignment_id = fb.id AND lb.claim_id = la.claim_id
    """
    answers = f"""
        JOIN "{assignment}" la ON la.id = fa.id
        JOIN "{assignment}" lb ON lb.id = fb.id
    """
    queries = {
        "claims": (claims, CLAIM_LABEL_COLUMNS),
        "answers": (answers, ANSWER_LABEL_COLUMNS),
    }
    found: dict[tuple[int, int], dict[str, int]] = defaultdict(
        lambda: {"claims": 0, "claims_differing": 0, "answers": 0, "answers_differing": 0}
    )
    sides = "fb.side > fa.side" if every_pair else "fa.side = 1 AND fb.side = 2"
    for kind, (joins, columns) in queries.items():
        differs = " OR ".join(_distinct(f"la.{c}", f"lb.{c}") for c in columns)
        sql = f"""
            WITH firsts AS ({_first_two_sql(guideline_version)})
            SELECT fa.reviewer_id, fb.reviewer_id, COUNT(*),
                   SUM(CASE WHEN {differs} THEN 1 ELSE 0 END)
            FROM firsts fa
            JOIN firsts fb ON fb.answer_id = fa.answer_id AND {sides}
            {joins}
            GROUP BY fa.reviewer_id, fb.reviewer_id
        """
        with connection.cursor() as cursor:
            cursor.execute(sql, [project.pk])
            for ra, rb, n, differing in cursor.fetchall():
                counts = found[(min(ra, rb), max(ra, rb))]
                counts[kind] += n
                counts[f"{kind}_differing"] += int(differing or 0)
    return dict(found)


def _distinct(left: str, right: str) -> str:
    """SQL: two columns differ, a NULL differing from a value (SQLite spells it IS NOT)."""
    if connection.vendor == "postgresql":
        return f"{left} IS DISTINCT FROM {right}"
    return f"{left} IS NOT {right}"


def _identity(reviewers: list[str], shared: dict[str, int] | None, schema) -> dict:
    """Whether a pair's two label sets are the same on every item they share: the mark of one
    label set imported twice under two names (SPEC.md "Gold from elsewhere"), whose kappa of
    1.000 measures nothing. The pair's entry says so, with the items it is over."""
    shared = shared or {"claims": 0, "claims_differing": 0, "answers": 0, "answers_differing": 0}
    # An answer carries labels of its own only where the schema has answer fields.
    answers = shared["answers"] if schema.answer_fields else 0
    items = shared["claims"] + answers
    identical = bool(items) and not (shared["claims_differing"] or shared["answers_differing"])
    if not identical:
        return {"identical_label_sets": False}
    what = (
        f"all {items} items ({shared['claims']} claims, {answers} answers)"
        if answers
        else f"all {items} claims"
    )
    return {
        "identical_label_sets": True,
        "identical_label_sets_note": (
            f"{reviewers[0]} and {reviewers[1]} gave identical labels on {what} they both "
            "labelled: not two independent label sets (was one label set imported twice? "
            "use import_gold for single-annotator gold)"
        ),
    }


def _usernames(ids: Iterable[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=list(ids)).values_list("pk", "username")
    return defaultdict(str, users)


# --- Point estimates from grouped counts ------------------------------------------------------


def human_kappas(project: Project) -> dict[str, float | None]:
    """Each field's reviewer-reviewer kappa over the whole project (slice all, every pair),
    from grouped counts: a handful of rows whatever the number of claims, so a streaming
    export can carry them without holding the aligned labels in memory. Same definitions as
    the report (scikit-learn's cohen_kappa_score with the field's full label list, weighted
    by the counts); None where kappa is undefined."""
    schema = project.schema
    label, answer, assignment = (
        ClaimLabel._meta.db_table,
        Answer._meta.db_table,
        Assignment._meta.db_table,
    )
    pairs: dict[str, dict[tuple, int]] = defaultdict(lambda: defaultdict(int))
    # One pass over the aligned claim labels for every claim field: grouped by the
    # citations too (a few hundred groups more), not read again for them.
    claim_sql = f"""
        WITH firsts AS ({_first_two_sql()})
        SELECT la.support, lb.support, la.severity, lb.severity,
               la.requires_evidence, lb.requires_evidence, la.citations, lb.citations, COUNT(*)
        FROM firsts fa
        JOIN firsts fb ON fb.answer_id = fa.answer_id AND fb.side = 2
        JOIN "{label}" la ON la.assignment_id = fa.id
        JOIN "{label}" lb ON lb.assignment_id = fb.id AND lb.claim_id = la.claim_id
        WHERE fa.side = 1
        GROUP BY la.support, lb.support, la.severity, lb.severity,
                 la.requires_evidence, lb.requires_evidence, la.citations, lb.citations
    """
    answer_sql = f"""
        WITH firsts AS ({_first_two_sql()})
        SELECT aa.relevance, ab.relevance, aa.abstention, ab.abstention, COUNT(*)
        FROM firsts fa
        JOIN firsts fb ON fb.answer_id = fa.answer_id AND fb.side = 2
        JOIN "{assignment}" aa ON aa.id = fa.id
        JOIN "{assignment}" ab ON ab.id = fb.id
        JOIN "{answer}" an ON an.id = fa.answer_id
        WHERE fa.side = 1
        GROUP BY aa.relevance, ab.relevance, aa.abstention, ab.abstention
    """
    with connection.cursor() as cursor:
        cursor.execute(claim_sql, [project.pk])
        citations = schema.claim("citations")
        for sa, sb, va, vb, ea, eb, ca, cb, n in cursor.fetchall():
            pairs["support"][(sa, sb)] += n
            pairs["support_binary"][(support_binary(sa), support_binary(sb))] += n
            pairs["severity"][(va, vb)] += n
            pairs["requires_evidence"][(bool(ea), bool(eb))] += n
            if citations:
                ca, cb = _json(ca) or {}, _json(cb) or {}
                for cited in ca.keys() & cb.keys():
                    pairs["citation"][(ca[cited], cb[cited])] += n
        cursor.execute(answer_sql, [project.pk])
        for rel_a, rel_b, abs_a, abs_b, n in cursor.fetchall():
            pairs["relevance"][(rel_a, rel_b)] += n
            if abs_a and abs_b:
                pairs["abstention"][(abs_a, abs_b)] += n
    fields = (*claim_report_fields(schema), *answer_report_fields(schema))
    return {name: _weighted_kappa(name, pairs[name], schema) for name in fields}


def _weighted_kappa(name: str, counts: dict[tuple, int], schema: LabelSchema) -> float | None:
    labels = _labels(name, schema)
    code = {label: i for i, label in enumerate(labels)}
    rows = [(code[a], code[b], n) for (a, b), n in counts.items() if a in code and b in code]
    if not rows:
        return None
    a_idx, b_idx, weights = (np.array(col) for col in zip(*rows, strict=True))
    k = len(labels)
    conf = np.zeros((k, k), dtype=np.int64)
    np.add.at(conf, (a_idx, b_idx), weights)
    kappa = kappa_from_confusion(conf, FIELDS[name].weights)
    return None if np.isnan(kappa) else float(kappa)
