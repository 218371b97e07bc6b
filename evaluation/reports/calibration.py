"""A judge run's calibration against gold (calibration_report), read only. The other judge
reports -- run comparison, few-shot export, one answer's detail -- share its gold (judge_gold)
and its scoring (score_items).

Everything is computed where it is read, from the current gold (annotate.gold derives it from
the reviewers' labels and the leads' decisions): a run re-scored after an adjudication shows
the change. The statistics are evaluation.calibration's and evaluation.agreement's pure
functions; this module only chooses the items and hands them the right arrays. About 600
lines: one report, whose parts (coverage, agreement, bias, relevance, problems) each read
the scored items.

Items, for claim support (SPEC.md "Model judges"; evaluation.calibration.calibration_population):
- **gold items** are the claims of the chosen split in answers labelled by two reviewers, or
  with gold imported from elsewhere (annotate.gold.IMPORTED: one label per item, no second
  reviewer), whose support_binary is decided for every claim. Each is *scored* (the judge
  gave an ok label), *malformed*, *timed out* or *missing* (no verdict); n counts the scored
  ones and coverage = n / gold items; `gold_sources` says where their gold came from;
- the **target** is every claim the judge labelled (ok) in an answer no reviewer has labelled
  and no imported gold covers, in any split: the population whose unsupported share the
  corrected estimates are about;
- claims of answers with a pending dispute or a single reviewer belong to neither and are
  counted (`excluded`); while a dispute is pending the estimate is `provisional`.

The binary figures (TPR, TNR, the corrections) read support_binary and are defined for every
judge. The three-way ones (accuracy, kappa, confusion over supported / contradicted /
insufficient evidence) need a three-way project and a judge that answered on that scale; a
binary judge's are undefined and say so, and a binary project's are its binary figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.urls import NoReverseMatch, reverse

from annotate.gold.pairs import IMPORTED
from annotate.gold.splits import DEFAULT_SPLIT
from annotate.models import Project
from annotate.schema import BINARY, UNSUPPORTED, support_binary
from evaluation.agreement import (
    RELEVANCE,
    SMALL_SAMPLE_N,
    SUPPORT,
    evidence_overlap,
    field_agreement,
)
from evaluation.calibration import (
    PopulationClaim,
    binary_rates,
    calibration_population,
    corrected_estimates,
    judge_report,
    unsupported_indicator,
)
from evaluation.judges.runs import same_model
from evaluation.models import JudgeRun
from evaluation.reports import corrections
from evaluation.reports.judge_gold import (
    MALFORMED,
    OK,
    SUPPORTED,
    TIMEOUT,
    ClaimInfo,
    PairGold,
    ProjectGold,
    RunVerdicts,
    VerdictRow,
    check_split,
    in_split,
    load_gold,
    load_verdicts,
)


def item_url(
    project: Project, run: JudgeRun, answer_pk: int, ordinal: int | None = None
) -> str | None:
    """The page showing the item with gold and verdict; None where the judge pages are not
    mounted (the numbers must not depend on a URL configuration)."""
    return _answer_urls(project.slug, run.pk)(answer_pk, ordinal)


_SENTINEL = 987654321


def _answer_urls(slug: str, run_pk: int):
    """item_url for one run: the URL reversed once, the answer put in by hand -- a report
    links every disagreement and failure, 100,000 of them at 10,000 answers, and reversing
    each took seconds."""
    try:
        template = reverse(
            "judge_answer", kwargs={"slug": slug, "run_pk": run_pk, "answer_pk": _SENTINEL}
        )
    except NoReverseMatch:
        return lambda answer_pk, ordinal=None: None
    head, tail = template.rsplit(str(_SENTINEL), 1)  # the answer is the URL's last number

    def url(answer_pk: int, ordinal: int | None = None) -> str:
        found = f"{head}{int(answer_pk)}{tail}"
        return f"{found}#claim-{ordinal}" if ordinal is not None else found

    return url


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# --- Calibration -----------------------------------------------------------------------------


@dataclass(slots=True)
class Scored:
    """A gold item the judge labelled: gold and judge on the binary scale always, on the
    three-way scale where both have one (the judge's label as given)."""

    claim: ClaimInfo
    pair: PairGold
    verdict: VerdictRow
    gold_binary: str
    gold_support: str | None  # the decided support on the project's scale, or None

    @property
    def judge(self) -> str:
        return self.verdict.label

    @property
    def judge_binary(self) -> str:
        return support_binary(self.verdict.label)


def population(gold: ProjectGold, verdicts: RunVerdicts):
    """evaluation.calibration.calibration_population over every claim of the project."""
    return calibration_population(
        PopulationClaim(
            claim=claim.pk,
            answer=claim.answer.pk,
            reviewers=gold.reviewers.get(claim.answer.pk, 0),
            decided=gold.gold_binary(claim.pk) is not None,
            judged=claim.pk in verdicts.claims and verdicts.claims[claim.pk].status == OK,
            imported=claim.answer.pk in gold.imported,
        )
        for claim in gold.claims.values()
    )


def score_items(
    gold: ProjectGold, verdicts: RunVerdicts, split: str, gold_pks=None
) -> tuple[list[Scored], dict[str, int]]:
    """The split's gold items the judge labelled (ok), and how the others were lost."""
    if gold_pks is None:
        gold_pks = set(population(gold, verdicts).gold)
    scored: list[Scored] = []
    lost = {"malformed": 0, "timeouts": 0, "missing": 0, "gold_items": 0}
    for claim in gold.claims_in(split):
        if claim.pk not in gold_pks:
            continue
        lost["gold_items"] += 1
        verdict = verdicts.claims.get(claim.pk)
        if verdict is None:
            lost["missing"] += 1
        elif verdict.status == MALFORMED:
            lost["malformed"] += 1
        elif verdict.status == TIMEOUT:
            lost["timeouts"] += 1
        else:
            scored.append(
                Scored(
                    claim,
                    gold.claim_pairs[claim.pk],
                    verdict,
                    gold.gold_binary(claim.pk),
                    gold.gold_support(claim.pk),
                )
            )
    return scored, lost


def judge_scale(project: Project, scored_labels: Iterable[str]) -> tuple[str, str | None]:
    """The scale a judge is scored on, and why three-way figures are undefined if they are:
    three-way in a three-way project whose judge answered on that scale, else binary."""
    if project.schema.binary:
        return "binary", None
    if any(label == UNSUPPORTED for label in scored_labels):
        return "binary", (
            "a binary judge: it answered 'unsupported', so its three-way accuracy and kappa "
            "are not defined (its binary figures are)"
        )
    return "three_way", None


def _on_scale(scored: list[Scored], scale: str) -> tuple[list[str], list[str]]:
    """(gold, judge) labels of the scored items on a scale; on the three-way scale only the
    items whose three-way gold is decided (both reviewers said unsupported but differ in
    subtype: binary gold, three-way still pending)."""
    if scale == "binary":
        return [s.gold_binary for s in scored], [s.judge_binary for s in scored]
    pairs = [(s.gold_support, s.judge) for s in scored if s.gold_support in SUPPORT]
    return [g for g, _ in pairs], [j for _, j in pairs]


def calibration_report(
    *,
    run: JudgeRun,
    split: str = DEFAULT_SPLIT,
    gold: ProjectGold | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The judge-versus-gold report of `calibration --json` (SPEC.md keys, and more)."""
    check_split(split)
    project = run.project
    gold = gold or load_gold(project)
    verdicts = load_verdicts(run)
    chosen = population(gold, verdicts)
    scored, lost = score_items(gold, verdicts, split, set(chosen.gold))
    judged_labels = [v.label for v in verdicts.claims.values() if v.status == OK]
    scale, undefined = judge_scale(project, judged_labels)

    binary_gold = [s.gold_binary for s in scored]
    binary_judge = [s.judge_binary for s in scored]
    binary = judge_report(binary_gold, binary_judge, BINARY)
    rates = binary_rates(binary_gold, binary_judge)
    if undefined:
        # A binary judge in a three-way project: no three-way figure at all, never a number.
        report = None
    elif scale == "binary":
        report = binary
    else:
        report = judge_report(*_on_scale(scored, "three_way"), SUPPORT)
    human = _human_agreement(gold, split, n_boot=min(n_boot, 1000), seed=seed)
    sources = _gold_sources(gold, split, chosen.gold)
    # Beside the human-human figure: the gold items it cannot cover (no second reviewer).
    human["no_second_reviewer"] = sources[IMPORTED]
    # The judge's kappa gets the interval the human ceiling has: a bootstrap over answers.
    kappa_ci = _judge_kappa_ci(scored, scale, n_boot=min(n_boot, 1000), seed=seed)
    binary_kappa_ci = _judge_kappa_ci(scored, "binary", n_boot=min(n_boot, 1000), seed=seed)

    target_pks = sorted(chosen.target)
    target = [verdicts.claims[pk].label for pk in target_pks]
    corrected = _corrected(scored, target, n_boot=n_boot, seed=seed)
    if not project.schema.binary:
        # The shares of contradicted and of insufficient_evidence, over the gold items whose
        # subtype is decided; refused, saying why, for a judge that answered 'unsupported'.
        corrected["three_way"] = corrections.three_way(
            list(zip(*_on_scale(scored, "three_way"), strict=True)), target, undefined=undefined
        )
    corrected.update(
        excluded=dict(chosen.excluded),
        disputes_pending=chosen.disputes,
        provisional=chosen.provisional,
        provisional_reason=chosen.provisional_reason,
    )
    strata = corrections.strata_by(
        [
            (s.claim.answer, s.gold_binary == UNSUPPORTED, s.judge_binary == UNSUPPORTED)
            for s in scored
        ],
        [
            (gold.claims[pk].answer, support_binary(label) == UNSUPPORTED)
            for pk, label in zip(target_pks, target, strict=True)
        ],
    )
    n = rates.n
    urls = _answer_urls(project.slug, run.pk)  # reversed once for every item's link
    # Three-way items compare three-way labels; an item whose gold subtype is still pending
    # (both reviewers said unsupported, differently) compares on the binary scale, since it
    # counts in TPR and the corrections there: a lead must find the items behind those.
    disagreement_labels = [
        (s.gold_binary, s.judge_binary)
        if scale == "binary" or s.gold_support is None
        else (s.gold_support, s.judge)
        for s in scored
    ]
    return {
        "project": project.slug,
        "judge": run.name,
        "model": run.model,
        "model_version": run.model_version,
        "prompt_sha256": run.prompt_sha256,
        "split": split,
        "scale": scale,
        "gold_items": lost["gold_items"],
        "gold_sources": sources,
        "n": n,
        "malformed": lost["malformed"],
        "timeouts": lost["timeouts"],
        "missing": lost["missing"],
        "coverage": _rate(n, lost["gold_items"]),
        "small_sample": n < SMALL_SAMPLE_N,
        "accuracy": report.accuracy if report else None,
        "kappa": report.kappa if report else None,
        "kappa_undefined_reason": undefined or (report.kappa_undefined_reason if report else None),
        "kappa_ci95": kappa_ci if report else None,
        "scale_n": report.n if report else 0,
        "human_kappa": human["kappa"],
        "human_agreement": human,
        "tpr": rates.tpr,
        "tnr": rates.tnr,
        "rates": rates.as_dict(),
        "confusion": (
            {"labels": list(report.labels), "matrix": [list(row) for row in report.matrix]}
            if report
            else None
        ),
        "per_label": report.as_dict()["per_label"] if report else [],
        "binary": {
            "n": binary.n,
            "accuracy": binary.accuracy,
            "kappa": binary.kappa,
            "kappa_undefined_reason": binary.kappa_undefined_reason,
            "kappa_ci95": binary_kappa_ci,
            "confusion": {
                "labels": list(binary.labels),
                "matrix": [list(row) for row in binary.matrix],
            },
        },
        "disagreements": [
            report_item(
                project, run, s.claim, gold=g, judge=j, pair=s.pair, verdict=s.verdict, urls=urls
            )
            for s, (g, j) in zip(scored, disagreement_labels, strict=True)
            if g is not None and g != j
        ],
        "corrected": corrected,
        "strata_by": strata,
        "bias": _bias(gold, verdicts, scored, evidence=project.schema.claim("evidence")),
        # A field the project does not label has no figure at all (SPEC "Label schema").
        **(
            {"relevance": _relevance(gold, verdicts, split)}
            if project.schema.answer("relevance")
            else {}
        ),
        "run": _run_summary(run, gold, verdicts),
        "problems": _problems(project, run, gold, verdicts),
    }


def _corrected(scored: list[Scored], target: list[str], *, n_boot: int, seed: int) -> dict:
    """The `corrected` block: PPI++ (the headline), classic PPI and Rogan–Gladen of the
    unsupported share of the target, from the scored gold items and the target's labels."""
    gold_pos = unsupported_indicator([s.gold_binary for s in scored])
    judge_pos = unsupported_indicator([s.judge_binary for s in scored])
    target_pos = unsupported_indicator(target)
    classic = corrected_estimates(gold_pos, judge_pos, target_pos, n_boot=n_boot, seed=seed)
    return {
        "target_n": classic.pop("target_n"),
        "p_obs": classic.pop("p_obs"),
        "ppi_plus_plus": corrections.ppi_plus_plus_block(gold_pos, judge_pos, target_pos),
        **classic,
    }


def report_item(
    project, run, claim: ClaimInfo, *, pair=None, verdict=None, urls=None, **labels
) -> dict:
    row = {
        "answer_id": claim.answer.answer_id,
        "claim_index": claim.ordinal,
        "case_id": claim.answer.case_id,
        "task_number": claim.answer.task_number,
        "claim": claim.text,
        **labels,
    }
    if pair is not None:
        row["gold_source"] = pair.source
    if verdict is not None:
        row["quote"] = verdict.quote
        row["quote_found"] = verdict.quote_found
    urls = urls or _answer_urls(project.slug, run.pk)
    row["url"] = urls(claim.answer.pk, claim.ordinal)
    return row


GOLD_SOURCES = ("agreed", "adjudicated", IMPORTED)


def _gold_sources(gold: ProjectGold, split: str, gold_pks: Iterable[int]) -> dict[str, int]:
    """The split's gold items by where their support_binary came from: two reviewers who
    agreed, a lead who decided, or gold imported from elsewhere (no second reviewer; an
    item reviewers also labelled counts by their gold, which stands over the imported)."""
    counts = dict.fromkeys(GOLD_SOURCES, 0)
    for pk in gold_pks:
        if in_split(gold.claims[pk].answer.split, split):
            source = gold.claim_pairs[pk].binary_source
            if source in counts:
                counts[source] += 1
    return counts


def _human_agreement(gold: ProjectGold, split: str, *, n_boot: int, seed: int) -> dict:
    """Reviewer A versus reviewer B on support (the project's scale) over the split's
    doubly-labelled claims: the ceiling a judge can be expected to reach against gold. The
    same on support_binary under `binary`, the ceiling of a binary judge."""
    labels = gold.project.schema.support_labels
    items = [
        (gold.claims[pk], p)
        for pk, p in gold.claim_pairs.items()
        if in_split(gold.claims[pk].answer.split, split) and p.a in labels and p.b in labels
    ]
    items.sort(key=lambda item: (item[0].answer.pk, item[0].ordinal))
    pairs = [p for _, p in items]
    groups = [claim.answer.pk for claim, _ in items]
    result = field_agreement(
        [p.a for p in pairs],
        [p.b for p in pairs],
        labels=labels,
        groups=groups,
        n_boot=n_boot,
        seed=seed,
    )
    binary = field_agreement(
        [support_binary(p.a) for p in pairs],
        [support_binary(p.b) for p in pairs],
        labels=BINARY,
        groups=groups,
        n_boot=n_boot,
        seed=seed,
    )
    return {
        **_agreement_dict(result),
        "binary": _agreement_dict(binary),
    }


def _agreement_dict(result) -> dict:
    return {
        "n": result.n,
        "raw_agreement": result.raw_agreement,
        "kappa": result.kappa,
        "ci95": list(result.ci95) if result.ci95 else None,
        "kappa_undefined_reason": result.kappa_undefined_reason,
        "confusion": {
            "labels": list(result.labels),
            "matrix": [list(row) for row in result.matrix],
        },
    }


def _judge_kappa_ci(
    scored: list[Scored], scale: str, *, n_boot: int, seed: int
) -> list[float] | None:
    """The 95% interval of the judge's kappa against gold on a scale: a percentile bootstrap
    over answers (a claim's verdicts are not independent of its answer's), as the reviewers'
    kappa has; None where kappa is undefined."""
    if scale == "binary":
        items = [(s.gold_binary, s.judge_binary, s.claim.answer.pk) for s in scored]
        labels = BINARY
    else:
        items = [(s.gold_support, s.judge, s.claim.answer.pk) for s in scored]
        items = [item for item in items if item[0] in SUPPORT and item[1] in SUPPORT]
        labels = SUPPORT
    if not items:
        return None
    gold_labels, judge_labels, answers = zip(*items, strict=True)
    result = field_agreement(
        gold_labels, judge_labels, labels=labels, groups=answers, n_boot=n_boot, seed=seed
    )
    return list(result.ci95) if result.ci95 else None


def _pass_rows(
    keys: Iterable[Hashable],
    judged: list[tuple[Hashable, str]],
    on_gold: list[tuple[Hashable, str, str]],
    name: Callable[[Hashable], str],
) -> list[dict[str, Any]]:
    """Judge pass rate (share `supported`) per group, beside the gold pass rate of the same
    group: a gap that differs between groups is the bias, not the pass rate alone."""
    n, passed = defaultdict(int), defaultdict(int)
    for key, label in judged:
        n[key] += 1
        passed[key] += label == SUPPORTED
    gn, gold_passed, judge_passed = defaultdict(int), defaultdict(int), defaultdict(int)
    for key, gold_label, judge_label in on_gold:
        gn[key] += 1
        gold_passed[key] += gold_label == SUPPORTED
        judge_passed[key] += judge_label == SUPPORTED
    return [
        {
            "group": name(key),
            "n": n[key],
            "pass_rate": _rate(passed[key], n[key]),
            "gold_n": gn[key],
            "gold_pass_rate": _rate(gold_passed[key], gn[key]),
            "judge_pass_rate_on_gold": _rate(judge_passed[key], gn[key]),
        }
        for key in keys
    ]


def _bias(
    gold: ProjectGold, verdicts: RunVerdicts, scored: list[Scored], *, evidence: bool
) -> dict[str, Any]:
    judged = [(gold.claims[pk], v.label) for pk, v in verdicts.claims.items() if v.status == OK]
    # Pass = supported, on gold and for the judge alike: the binary reading works for judges
    # and projects of either scale.
    judged = [(claim, support_binary(label)) for claim, label in judged]
    on_gold = [(s.claim, s.gold_binary, s.judge_binary) for s in scored]

    lengths = sorted({c.answer.pk: c.answer.length for c, _ in judged}.values())
    cuts = np.quantile(lengths, [1 / 3, 2 / 3]).tolist() if lengths else [0.0, 0.0]

    def tercile(claim: ClaimInfo) -> int:
        return 0 if claim.answer.length <= cuts[0] else 1 if claim.answer.length <= cuts[1] else 2

    tercile_names = [
        f"short (≤ {cuts[0]:.0f} characters)",
        f"medium ({cuts[0]:.0f}–{cuts[1]:.0f})",
        f"long (> {cuts[1]:.0f})",
    ]

    def by(key: Callable[[ClaimInfo], Hashable], keys, name) -> list[dict[str, Any]]:
        return _pass_rows(
            keys,
            [(key(c), label) for c, label in judged],
            [(key(c), g, j) for c, g, j in on_gold],
            name,
        )

    variants = sorted(
        {c.answer.variant for c, _ in judged} | {c.answer.variant for c, *_ in on_gold}
    )
    bias = {
        "answer_length": by(tercile, range(3), lambda k: tercile_names[k]),
        "variant": by(lambda c: c.answer.variant, variants, str),
        "abstention": by(
            lambda c: c.answer.abstained,
            (False, True),
            lambda k: "abstained" if k else "answered",
        ),
    }
    if evidence:  # without evidence labels there is no gold to overlap with
        bias["evidence_overlap"] = evidence_overlap(
            [s.verdict.evidence_ids or [] for s in scored],
            [list(s.pair.evidence_ids) for s in scored],
        ).as_dict()
    return bias


def _relevance(gold: ProjectGold, verdicts: RunVerdicts, split: str) -> dict[str, Any]:
    """The judge's answer-level relevance against gold relevance (linear-weighted kappa)."""
    g, j = [], []
    lost = {"malformed": 0, "timeouts": 0, "missing": 0}
    for answer_pk, pair in sorted(gold.answer_pairs.items()):
        if not in_split(gold.answers[answer_pk].split, split):
            continue
        if pair.gold.get("relevance") not in RELEVANCE:
            continue
        verdict = verdicts.answers.get(answer_pk)
        if verdict is None:
            lost["missing"] += 1
        elif verdict.status == MALFORMED:
            lost["malformed"] += 1
        elif verdict.status == TIMEOUT:
            lost["timeouts"] += 1
        else:
            g.append(pair.gold["relevance"])
            j.append(verdict.relevance)
    report = judge_report(g, j, RELEVANCE, weights="linear")
    return {
        "n": report.n,
        **lost,
        "accuracy": report.accuracy,
        "kappa": report.kappa,
        "weighting": "linear",
        "confusion": {
            "labels": list(report.labels),
            "matrix": [list(row) for row in report.matrix],
        },
    }


def _run_summary(run: JudgeRun, gold: ProjectGold, verdicts: RunVerdicts) -> dict[str, Any]:
    rows = verdicts.all()
    self_judged = sum(same_model(run.model, gold.answers[v.answer_id].variant_model) for v in rows)
    return {
        "name": run.name,
        "model": run.model,
        "model_version": run.model_version,
        "prompt_sha256": run.prompt_sha256,
        "settings": run.settings,
        "imported_at": run.imported_at.isoformat(),
        "verdicts": len(rows),
        "claim_verdicts": len(verdicts.claims),
        "answer_verdicts": len(verdicts.answers),
        "ok": sum(v.status == OK for v in rows),
        "malformed": sum(v.status == MALFORMED for v in rows),
        "timeouts": sum(v.status == TIMEOUT for v in rows),
        "quotes_not_found": sum(v.quote_found is False for v in rows),
        "self_judged": self_judged,
        "self_judged_models": sorted(
            {
                a.variant_model
                for a in gold.answers.values()
                if same_model(run.model, a.variant_model)
            }
        ),
    }


def _problems(project, run, gold: ProjectGold, verdicts: RunVerdicts) -> dict[str, list]:
    """Every verdict of the run that was not scored, or whose quote was not found."""
    out: dict[str, list] = {"malformed": [], "timeouts": [], "quotes_not_found": []}
    urls = _answer_urls(project.slug, run.pk)
    for v in verdicts.all():
        answer = gold.answers[v.answer_id]
        claim = gold.claims.get(v.claim_id) if v.claim_id else None
        row = {
            "line": v.line,
            "answer_id": answer.answer_id,
            "case_id": answer.case_id,
            "task_number": answer.task_number,
            "claim_index": claim.ordinal if claim else None,
            "url": urls(answer.pk, claim.ordinal if claim else None),
        }
        if v.status == MALFORMED:
            out["malformed"].append({**row, "problem": v.problem, "raw": v.raw})
        elif v.status == TIMEOUT:
            out["timeouts"].append({**row, "raw": v.raw})
        if v.quote_found is False:
            out["quotes_not_found"].append(
                {**row, "quote": v.quote, "evidence_ids": v.evidence_ids}
            )
    return out


# --- Comparing two runs ----------------------------------------------------------------------


# --- Few-shot export -------------------------------------------------------------------------


# --- One answer, as the judge and the gold see it --------------------------------------------
