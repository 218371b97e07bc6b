"""Agreement of every label set, for projects where more than two reviewers label an answer
(SPEC.md "More than two reviewers"): Krippendorff's alpha over all submitted label sets
(nominal or ordinal by field) and Fleiss' kappa for the nominal fields, per field and slice,
each with n and the bootstrap over answers; and Cohen's kappa of every pair of reviewers on
the items both labelled. The statistics are evaluation.multirater's pure functions.

The agreement report reads this only when some answer has more than two submitted label sets
(more_than_two, one query): a project of pairs keeps its report exactly as it was.

Every label set is read as it was submitted, one row per reviewer and item: three queries
(claim labels, their citations where any, answer labels), whatever the size.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count

from annotate.models import Answer, Assignment, Case, ClaimLabel, Project
from evaluation.agreement import FIELDS, FieldAgreement, field_agreement_encoded
from evaluation.multirater import LabelSet, MultiRaterAgreement, multirater_agreement

# Krippendorff's level of measurement per report field (SPEC.md): the ordinal scales read
# their order, every other field is nominal (requires_evidence too: yes/no has no order).
ORDINAL = frozenset({"severity", "relevance"})


def level_of(name: str) -> str:
    return "ordinal" if name in ORDINAL else "nominal"


def more_than_two(project: Project, *, guideline_version: int | None = None) -> bool:
    """Whether some answer of the project has more than two submitted label sets (made under
    `guideline_version`, when given). One query."""
    # A gold check's label set is measured against gold, never agreement (annotate.checks).
    submitted = Assignment.objects.filter(
        project=project, status=Assignment.Status.SUBMITTED, is_check=False
    )
    if guideline_version is not None:
        submitted = submitted.filter(guideline_version=guideline_version)
    return submitted.values("answer_id").annotate(n=Count("pk")).filter(n__gt=2).exists()


@dataclass(frozen=True)
class Columns:
    """Every label set of one field, one row each: the item (a claim, a claim's cited passage,
    or an answer), its answer (the bootstrap's group), the reviewer, the label's position in
    `labels`, and the item's slice flags."""

    labels: tuple
    item: np.ndarray
    group: np.ndarray
    rater: np.ndarray
    code: np.ndarray
    answerable: np.ndarray
    adversarial: np.ndarray

    def mask(self, slice_name: str) -> np.ndarray:
        return {
            "all": np.ones(len(self.code), dtype=bool),
            "answerable": self.answerable,
            "unanswerable": ~self.answerable,
            "adversarial": self.adversarial,
        }[slice_name]

    def label_sets(self, mask: np.ndarray, names: dict[int, str]) -> list[LabelSet]:
        """The rows under `mask` as LabelSets, reviewers by name (the pairs' names)."""
        labels = self.labels
        return [
            LabelSet(item, group, names[rater], labels[code])
            for item, group, rater, code in zip(
                self.item[mask].tolist(),
                self.group[mask].tolist(),
                self.rater[mask].tolist(),
                self.code[mask].tolist(),
                strict=True,
            )
        ]


def _columns(labels, rows: Sequence[tuple]) -> Columns:
    """Columns from rows of (item, group, rater, code, answerable, adversarial); a row without
    a label (code -1: the field left empty, an abstention on an answer that did not abstain)
    is no label set."""
    array = np.array(rows, dtype=np.int64).reshape(-1, 6)
    array = array[array[:, 3] >= 0]
    return Columns(
        labels=tuple(labels),
        item=array[:, 0],
        group=array[:, 1],
        rater=array[:, 2],
        code=array[:, 3],
        answerable=array[:, 4].astype(bool),
        adversarial=array[:, 5].astype(bool),
    )


def _submitted_sql(*, claims: bool = False, guideline_version: int | None = None) -> str:
    """FROM the project's submitted assignments `s` but gold checks' (with their claim labels
    `l` when `claims`), each with its case `c`; the project's pk is the parameter."""
    assignment = Assignment._meta.db_table
    answer, case, label = Answer._meta.db_table, Case._meta.db_table, ClaimLabel._meta.db_table
    labels = f'JOIN "{label}" l ON l.assignment_id = s.id' if claims else ""
    version = (
        "" if guideline_version is None else f"AND s.guideline_version = {int(guideline_version)}"
    )
    return f"""
        FROM "{assignment}" s
        JOIN "{answer}" an ON an.id = s.answer_id
        JOIN "{case}" c ON c.id = an.case_id
        {labels}
        WHERE s.project_id = %s AND s.status = 'submitted' AND NOT s.is_check {version}
    """


def read_label_sets(
    project: Project,
    fields: Iterable[str],
    labels_of: dict[str, tuple],
    *,
    guideline_version: int | None = None,
) -> dict[str, Columns]:
    """Every submitted label set of each report field in `fields` (labels_of: every report
    field's label list, support on the project's scale); with `guideline_version`, those
    made under that version of the guidelines."""
    version = guideline_version
    fields = tuple(fields)
    params: list = []

    def code(column: str, labels) -> str:
        cases = " ".join("WHEN %s THEN " + str(i) for i in range(len(labels)))
        params.extend(labels)
        return f"CASE {column} {cases} ELSE -1 END"

    flags = "CASE WHEN c.answerable THEN 1 ELSE 0 END, CASE WHEN c.adversarial THEN 1 ELSE 0 END"
    support, severity = labels_of["support"], labels_of["severity"]
    claim_sql = f"""
        SELECT l.claim_id, s.answer_id, s.reviewer_id, {flags},
               {code("l.support", support)}, {code("l.severity", severity)},
               CASE WHEN l.requires_evidence THEN 0 ELSE 1 END
        {_submitted_sql(claims=True, guideline_version=version)}
        ORDER BY s.answer_id, l.claim_id, s.submitted_at, s.id
    """
    out: dict[str, Columns] = {}
    with connection.cursor() as cursor:
        cursor.execute(claim_sql, [*params, project.pk])
        rows = cursor.fetchall()
    claim_rows = {name: [] for name in ("support", "support_binary", "severity", "requires")}
    for claim, answer, rater, answerable, adversarial, sup, sev, req in rows:
        head = (claim, answer, rater)
        tail = (answerable, adversarial)
        claim_rows["support"].append((*head, sup, *tail))
        # support_binary: position 0 is "supported" on either scale, any other is unsupported
        claim_rows["support_binary"].append((*head, -1 if sup < 0 else int(sup > 0), *tail))
        claim_rows["severity"].append((*head, sev, *tail))
        claim_rows["requires"].append((*head, req, *tail))
    source = {"requires_evidence": "requires"}
    for name in ("support", "support_binary", "severity", "requires_evidence"):
        if name in fields:
            out[name] = _columns(labels_of[name], claim_rows[source.get(name, name)])
    if "citation" in fields:
        out["citation"] = _citations(project, labels_of["citation"], version)
    answer_fields = [name for name in ("relevance", "abstention") if name in fields]
    if answer_fields:
        out.update(_answers(project, answer_fields, labels_of, version))
    return out


def _citations(project: Project, labels, version: int | None = None) -> Columns:
    """Each cited passage's verdict per reviewer: an item is a claim's cited passage."""
    empty = "'{}'::jsonb" if connection.vendor == "postgresql" else "'{}'"
    sql = f"""
        SELECT l.claim_id, s.answer_id, s.reviewer_id, c.answerable, c.adversarial, l.citations
        {_submitted_sql(claims=True, guideline_version=version)}
              AND l.citations <> {empty}
        ORDER BY s.answer_id, l.claim_id, s.submitted_at, s.id
    """
    code = {value: i for i, value in enumerate(labels)}
    items: dict[tuple[int, str], int] = {}
    rows = []
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for claim, answer, rater, answerable, adversarial, citations in cursor.fetchall():
            if isinstance(citations, str):
                citations = json.loads(citations)
            for cited, verdict in sorted((citations or {}).items()):
                item = items.setdefault((claim, cited), len(items))
                flags = (int(bool(answerable)), int(bool(adversarial)))
                rows.append((item, answer, rater, code.get(verdict, -1), *flags))
    return _columns(labels, rows)


def _answers(
    project: Project, fields: list[str], labels_of, version: int | None = None
) -> dict[str, Columns]:
    sql = f"""
        SELECT s.answer_id, s.reviewer_id, c.answerable, c.adversarial, s.relevance, s.abstention
        {_submitted_sql(guideline_version=version)}
        ORDER BY s.answer_id, s.submitted_at, s.id
    """
    codes = {name: {value: i for i, value in enumerate(labels_of[name])} for name in fields}
    rows: dict[str, list] = {name: [] for name in fields}
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        for answer, rater, answerable, adversarial, relevance, abstention in cursor.fetchall():
            flags = (int(bool(answerable)), int(bool(adversarial)))
            values = {"relevance": relevance, "abstention": abstention}
            for name in fields:
                found = codes[name].get(values[name], -1) if values[name] is not None else -1
                rows[name].append((answer, answer, rater, found, *flags))
    return {name: _columns(labels_of[name], rows[name]) for name in fields}


def _usernames(ids: Iterable[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=list(ids)).values_list("pk", "username")
    return dict(users)


@dataclass(frozen=True)
class EveryLabelSet:
    """The report's part from every label set: `slices` (slice -> field -> the JSON keys SPEC
    adds: raters, alpha, alpha_ci95, fleiss_kappa for nominal fields, and their n), `pairs`
    (field -> (reviewer, reviewer) -> Cohen's kappa on the items both labelled, slice all),
    and the reviewers' ids by name."""

    slices: dict[str, dict[str, dict]]
    pairs: dict[str, dict[tuple[Hashable, Hashable], FieldAgreement]]
    ids: dict[str, int]


def every_label_set(
    project: Project,
    fields: Iterable[str],
    labels_of: dict[str, tuple],
    *,
    slices: Iterable[str],
    n_boot: int = 1000,
    seed: int = 0,
    guideline_version: int | None = None,
) -> EveryLabelSet:
    """Alpha and Fleiss' kappa of every field of `fields` in each slice, and every pair's
    Cohen's kappa (slice all), over all submitted label sets (those made under
    `guideline_version`, when given)."""
    columns = read_label_sets(project, fields, labels_of, guideline_version=guideline_version)
    raters = set().union(*(set(c.rater.tolist()) for c in columns.values()))
    names = _usernames(raters)
    out: dict[str, dict[str, dict]] = {}
    pairs: dict[str, dict] = {}
    for slice_name in slices:
        section = out[slice_name] = {}
        for name, data in columns.items():
            result = multirater_agreement(
                data.label_sets(data.mask(slice_name), names),
                labels=data.labels,
                level=level_of(name),
                n_boot=n_boot,
                seed=seed,
                pairwise=slice_name == "all",
            )
            section[name] = as_report_keys(result)
            if slice_name == "all":
                pairs[name] = result.pairwise
    return EveryLabelSet(out, pairs, {name: pk for pk, name in names.items()})


def as_report_keys(result: MultiRaterAgreement) -> dict:
    """A field's multi-rater figures as the report's slices carry them: MultiRaterAgreement's
    keys, its pairs aside (they are the report's `pairs`)."""
    keys = result.as_dict()
    del keys["pairwise"]
    return keys


def no_items(name: str, labels) -> dict:
    """A field two reviewers of a pair never both labelled: n 0, as the report writes it."""
    empty = np.zeros(0, dtype=np.intp)
    return field_agreement_encoded(
        empty, empty, labels=labels, weights=FIELDS[name].weights, n_boot=0
    ).as_dict()
