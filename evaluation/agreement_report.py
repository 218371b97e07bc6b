"""The agreement report: the two reviewers' labels aligned item by item, then the pure
statistics of evaluation.agreement per field, per slice and per reviewer pair.

Claims are aligned by one SQL query (a window function picks each answer's first two
submitted label sets, a self-join pairs their claim labels), so the report over 100,000
doubly-labelled claims is one round trip plus vectorised statistics.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import connection

from annotate.models import Answer, Assignment, Case, ClaimLabel, Project
from evaluation.agreement import (
    ABSTENTION,
    CITATION,
    FIELDS,
    RELEVANCE,
    REQUIRES_EVIDENCE,
    SEVERITY,
    SUPPORT,
    evidence_overlap,
    field_agreement,
)

SLICES = ("all", "answerable", "unanswerable", "adversarial")
CLAIM_REPORT_FIELDS = ("support", "severity", "requires_evidence", "citation")
ANSWER_REPORT_FIELDS = ("relevance", "abstention")
LABELS = {
    "support": SUPPORT,
    "severity": SEVERITY,
    "requires_evidence": REQUIRES_EVIDENCE,
    "citation": CITATION,
    "relevance": RELEVANCE,
    "abstention": ABSTENTION,
}


@dataclass
class Aligned:
    """Parallel lists: item i was labelled a[i] by reviewer A and b[i] by reviewer B."""

    a: list
    b: list
    groups: list[int]  # answer id of each item: the bootstrap resamples answers
    slices: list[frozenset[str]]
    pairs: list[tuple[int, int]]

    @classmethod
    def empty(cls) -> Aligned:
        return cls([], [], [], [], [])

    def add(self, a, b, group, slices, pair) -> None:
        self.a.append(a)
        self.b.append(b)
        self.groups.append(group)
        self.slices.append(slices)
        self.pairs.append(pair)

    def select(self, keep) -> Aligned:
        idx = [i for i in range(len(self.a)) if keep(i)]
        return Aligned(
            [self.a[i] for i in idx],
            [self.b[i] for i in idx],
            [self.groups[i] for i in idx],
            [self.slices[i] for i in idx],
            [self.pairs[i] for i in idx],
        )


def _slices(answerable: bool, adversarial: bool) -> frozenset[str]:
    names = {"all", "answerable" if answerable else "unanswerable"}
    if adversarial:
        names.add("adversarial")
    return frozenset(names)


def _first_two_sql() -> str:
    """Each answer's first two submitted assignments, numbered 1 and 2."""
    assignment = Assignment._meta.db_table
    return f"""
        SELECT id, answer_id, reviewer_id,
               ROW_NUMBER() OVER (PARTITION BY answer_id ORDER BY submitted_at, id) AS side
        FROM "{assignment}"
        WHERE project_id = %s AND status = 'submitted'
    """


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def aligned_claims(project: Project) -> dict[str, Aligned]:
    """Claim-level fields, aligned. One query."""
    label, answer, case = ClaimLabel._meta.db_table, Answer._meta.db_table, Case._meta.db_table
    sql = f"""
        WITH firsts AS ({_first_two_sql()})
        SELECT fa.answer_id, fa.reviewer_id, fb.reviewer_id, c.answerable, c.adversarial,
               la.support, lb.support, la.severity, lb.severity,
               la.requires_evidence, lb.requires_evidence,
               la.citations, lb.citations, la.evidence_ids, lb.evidence_ids
        FROM firsts fa
        JOIN firsts fb ON fb.answer_id = fa.answer_id AND fb.side = 2
        JOIN "{label}" la ON la.assignment_id = fa.id
        JOIN "{label}" lb ON lb.assignment_id = fb.id AND lb.claim_id = la.claim_id
        JOIN "{answer}" an ON an.id = fa.answer_id
        JOIN "{case}" c ON c.id = an.case_id
        WHERE fa.side = 1
        ORDER BY fa.answer_id, la.claim_id
    """
    out = {name: Aligned.empty() for name in (*CLAIM_REPORT_FIELDS, "evidence")}
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for row in cursor.fetchall():
            (answer_id, ra, rb, answerable, adversarial, sa, sb, va, vb, ea, eb, ca, cb, ia, ib) = (
                row
            )
            slices, pair = _slices(bool(answerable), bool(adversarial)), (ra, rb)
            out["support"].add(sa, sb, answer_id, slices, pair)
            out["severity"].add(va, vb, answer_id, slices, pair)
            out["requires_evidence"].add(bool(ea), bool(eb), answer_id, slices, pair)
            ca, cb = _json(ca) or {}, _json(cb) or {}
            for cited in sorted(ca.keys() & cb.keys()):
                out["citation"].add(ca[cited], cb[cited], answer_id, slices, pair)
            out["evidence"].add(
                frozenset(_json(ia) or ()), frozenset(_json(ib) or ()), answer_id, slices, pair
            )
    return out


def aligned_answers(project: Project) -> dict[str, Aligned]:
    """Answer-level fields, aligned. One query. Abstention counts only answers that declined
    (where both reviewers gave a verdict)."""
    assignment, answer, case = Assignment._meta.db_table, Answer._meta.db_table, Case._meta.db_table
    sql = f"""
        WITH firsts AS ({_first_two_sql()})
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
    out = {name: Aligned.empty() for name in ANSWER_REPORT_FIELDS}
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for answer_id, ra, rb, answerable, adversarial, rel_a, rel_b, abs_a, abs_b in cursor:
            slices, pair = _slices(bool(answerable), bool(adversarial)), (ra, rb)
            if rel_a is not None and rel_b is not None:
                out["relevance"].add(rel_a, rel_b, answer_id, slices, pair)
            if abs_a and abs_b:
                out["abstention"].add(abs_a, abs_b, answer_id, slices, pair)
    return out


def _field_report(name: str, data: Aligned, *, n_boot: int, seed: int) -> dict:
    result = field_agreement(
        data.a,
        data.b,
        labels=LABELS[name],
        weights=FIELDS[name].weights,
        groups=data.groups,
        n_boot=n_boot,
        seed=seed,
    )
    return result.as_dict()


def _evidence_report(data: Aligned) -> dict:
    overlap = evidence_overlap(data.a, data.b)
    return {"n": overlap.n, "mean_jaccard": overlap.mean_jaccard}


def agreement_report(project: Project, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The `agreement --json` shape of SPEC.md, plus evidence overlap."""
    aligned = {**aligned_claims(project), **aligned_answers(project)}
    fields = (*CLAIM_REPORT_FIELDS, *ANSWER_REPORT_FIELDS)
    report: dict = {"project": project.slug, "slices": {}, "pairs": []}
    for slice_name in SLICES:
        section = {}
        for name in fields:
            data = aligned[name].select(lambda i, d=aligned[name], s=slice_name: s in d.slices[i])
            section[name] = _field_report(name, data, n_boot=n_boot, seed=seed)
        evidence = aligned["evidence"].select(
            lambda i, d=aligned["evidence"], s=slice_name: s in d.slices[i]
        )
        section["evidence"] = _evidence_report(evidence)
        report["slices"][slice_name] = section
    names = _usernames({r for d in aligned.values() for p in d.pairs for r in p})
    pair_keys = sorted(
        {tuple(sorted(p)) for d in aligned.values() for p in d.pairs},
        key=lambda p: (names[p[0]], names[p[1]]),
    )
    for key in pair_keys:
        entry = {"reviewers": [names[key[0]], names[key[1]]]}
        for name in fields:
            data = aligned[name].select(
                lambda i, d=aligned[name], k=key: tuple(sorted(d.pairs[i])) == k
            )
            entry[name] = _field_report(name, data, n_boot=n_boot, seed=seed)
        report["pairs"].append(entry)
    return report


def _usernames(ids: Iterable[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=list(ids)).values_list("pk", "username")
    return defaultdict(str, users)
