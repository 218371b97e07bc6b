"""Model-judge runs: parse a run file (SPEC.md "Model judges") and import it, all or nothing.

The file's first line describes the run, each further line is one verdict about a claim
(`claim_index`, 0-based) or about an answer (no `claim_index`). Two kinds of problem are kept
apart:

- **import errors** are mistakes in the file itself -- an unknown answer, a claim index out of
  range, a second verdict for the same item, a missing field. Every one is reported as
  `line N: message` and nothing is written;
- **malformed verdicts** are the judge's own failures -- a label that is missing, null or
  outside the vocabulary. They are imported with status `malformed` and their raw response, to
  be counted and shown, and are never scored. A `status: "timeout"` row is imported as a
  timeout, whatever else it carries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count

from annotate.common import bulk, collector, computed, safe_json
from annotate.imports.bundles import MAX_ID, MAX_SHORT_TEXT, MAX_TEXT
from annotate.imports.lines import BundleError, BundleInvalid, JsonLines, kind_of, too_long
from annotate.imports.records import quote_occurs
from annotate.models import Answer, Claim, Passage, Project, Variant
from annotate.schema import RELEVANCE, SCALES, UNSUPPORTED
from evaluation.models import JudgeRun, Verdict

# A judge may answer on the three-way scale or the binary one (supported / unsupported) in
# any project: a binary judge's three-way figures are then undefined, its binary ones are not.
JUDGE_LABELS = (*SCALES["three_way"], UNSUPPORTED)

RUN_FIELDS = ({"judge", "model", "prompt"}, {"model_version", "settings"})
VERDICT_FIELDS = (
    {"answer_id", "raw"},
    {"claim_index", "label", "relevance", "evidence_ids", "quote", "status", "confidence"},
)
STATUSES = tuple(Verdict.Status.values)
BATCH = 1000
# Limits (docs/judge-runs.md): the name and model as their columns hold them; a prompt or a
# raw response as long as an answer may be; a quote as long as a reviewer's may be.
MAX_RUN_NAME = JudgeRun._meta.get_field("name").max_length
MAX_MODEL = JudgeRun._meta.get_field("model").max_length
MAX_PROMPT = MAX_RAW = MAX_TEXT
MAX_QUOTE = MAX_SHORT_TEXT
MAX_EVIDENCE_IDS = 1_000


@dataclass(slots=True)
class RunRecord:
    line: int
    name: str
    model: str
    model_version: str = ""
    prompt: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class VerdictRecord:
    line: int
    answer_id: str
    claim_index: int | None
    raw: str
    status: str = Verdict.Status.OK
    problem: str = ""
    label: str = ""
    relevance: int | None = None
    evidence_ids: list[str] = field(default_factory=list)
    quote: str = ""
    confidence: float | None = None


@dataclass
class ParsedRun:
    run: RunRecord
    verdicts: list[VerdictRecord]


def _unknown_fields(obj: dict, spec: tuple[set[str], set[str]], kind: str) -> list[str]:
    required, optional = spec
    allowed = ", ".join(sorted(required | optional))
    return [
        f"unknown field '{key}' in a {kind} line (allowed: {allowed})"
        for key in sorted(set(obj) - required - optional - {"type"})
    ]


def parse_judge_run(
    lines: Iterable[bytes | str],
    *,
    claim_counts: Mapping[str, int],
    name: str | None = None,
) -> ParsedRun:
    """Parse and validate a judge-run file. Raises BundleInvalid with every problem found.

    claim_counts: answer_id -> number of claims, for every answer of the project.
    name: replaces the file's `judge` as the run's name.
    """
    errors: list[BundleError] = []
    run: RunRecord | None = None
    verdicts: list[VerdictRecord] = []
    first_line: dict[tuple[str, int | None], int] = {}
    missing_run_reported = False
    for number, obj in JsonLines(lines, errors):
        kind = obj.get("type")
        if kind == "run":
            if run is not None or first_line:
                errors.append(BundleError(number, "the run line must come first, and only once"))
                continue
            run = _parse_run(number, obj, errors, name)
        elif kind == "verdict":
            if run is None and not missing_run_reported:
                # Unless an earlier line was refused unread: that may well be the run line.
                if not any(error.line < number for error in errors):
                    errors.append(BundleError(number, "the run line (type 'run') must come first"))
                missing_run_reported = True
            record = _parse_verdict(number, obj, errors, claim_counts)
            if record is None:
                continue
            key = (record.answer_id, record.claim_index)
            if key in first_line:
                item = "the answer" if record.claim_index is None else f"claim {key[1]}"
                errors.append(
                    BundleError(
                        number,
                        f"a second verdict for {item} of answer '{record.answer_id}' "
                        f"(the first is on line {first_line[key]})",
                    )
                )
                continue
            first_line[key] = number
            verdicts.append(record)
        else:
            got = "no 'type'" if kind is None else f"type {kind!r}"
            errors.append(BundleError(number, f"{got}: each line is a 'run' or a 'verdict'"))
    if run is None and not missing_run_reported:
        errors.append(BundleError(0, "the file holds no run line (type 'run')"))
    if run is not None and not verdicts and not errors:
        errors.append(BundleError(0, "the file holds no verdicts"))
    if errors:
        raise BundleInvalid(errors)
    assert run is not None
    return ParsedRun(run=run, verdicts=verdicts)


def _string(
    number: int, obj: dict, key: str, errors: list[BundleError], *, required: bool, max_length: int
):
    value = obj.get(key)
    if value is None:
        if required:
            errors.append(BundleError(number, f"missing required field '{key}'"))
        return ""
    if not isinstance(value, str):
        errors.append(BundleError(number, f"'{key}' must be a string, got {kind_of(value)}"))
        return ""
    if len(value) > max_length:
        errors.append(BundleError(number, too_long(key, value, max_length)))
        return ""
    return value


def _parse_run(number: int, obj: dict, errors: list[BundleError], name: str | None) -> RunRecord:
    errors.extend(BundleError(number, m) for m in _unknown_fields(obj, RUN_FIELDS, "run"))
    judge = _string(number, obj, "judge", errors, required=True, max_length=MAX_PROMPT).strip()
    model = _string(number, obj, "model", errors, required=True, max_length=MAX_PROMPT).strip()
    if isinstance(obj.get("judge"), str) and not obj["judge"].strip() and not name:
        errors.append(BundleError(number, "'judge' must not be empty"))
    if isinstance(obj.get("model"), str) and not obj["model"].strip():
        errors.append(BundleError(number, "'model' must not be empty"))
    for key, limit in (("judge", MAX_RUN_NAME), ("model", MAX_MODEL), ("model_version", MAX_MODEL)):
        value = obj.get(key)
        if isinstance(value, str) and limit < len(value.strip()) <= MAX_PROMPT:
            errors.append(BundleError(number, f"'{key}' is longer than {limit} characters"))
    if name is not None and len(name.strip()) > MAX_RUN_NAME:
        errors.append(BundleError(number, f"the run name is longer than {MAX_RUN_NAME} characters"))
    elif name is not None and safe_json.text_problem(name):
        errors.append(BundleError(number, f"the run name: {safe_json.text_problem(name)}"))
    settings = obj.get("settings") or {}
    if not isinstance(settings, dict):
        errors.append(BundleError(number, f"'settings' must be an object, got {kind_of(settings)}"))
        settings = {}
    return RunRecord(
        line=number,
        name=(name or judge).strip(),
        model=model,
        model_version=_string(
            number, obj, "model_version", errors, required=False, max_length=MAX_PROMPT
        ).strip(),
        prompt=_string(number, obj, "prompt", errors, required=True, max_length=MAX_PROMPT),
        settings=settings,
    )


def _parse_verdict(
    number: int, obj: dict, errors: list[BundleError], claim_counts: Mapping[str, int]
) -> VerdictRecord | None:
    before = len(errors)
    errors.extend(BundleError(number, m) for m in _unknown_fields(obj, VERDICT_FIELDS, "verdict"))
    if "raw" not in obj:
        errors.append(
            BundleError(number, "missing required field 'raw' (the judge's response; \"\" if none)")
        )
    raw = _string(number, obj, "raw", errors, required=False, max_length=MAX_RAW)
    answer_id = _string(number, obj, "answer_id", errors, required=True, max_length=MAX_ID)
    if isinstance(obj.get("answer_id"), str) and not obj["answer_id"]:
        # Looked up only when given: an empty one reached the import as an unknown answer.
        errors.append(BundleError(number, "'answer_id' must not be empty"))
    index, index_refused = obj.get("claim_index"), False
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        errors.append(
            BundleError(number, f"'claim_index' must be an integer, got {kind_of(index)}")
        )
        index, index_refused = None, True  # about a claim or the answer? unknown
    status = obj.get("status", Verdict.Status.OK)
    if status not in STATUSES:
        errors.append(BundleError(number, f"'status' must be one of {', '.join(STATUSES)}"))
    if answer_id:
        count = claim_counts.get(answer_id)
        if count is None:
            errors.append(BundleError(number, f"unknown answer_id '{answer_id}'"))
        elif index is not None and not 0 <= index < count:
            has = f"claims 0–{count - 1}" if count else "no claims"
            errors.append(
                BundleError(
                    number,
                    f"claim_index {index} is out of range: answer '{answer_id}' has {has}",
                )
            )
    if index is None and "label" in obj and not index_refused:
        errors.append(
            BundleError(
                number, "'label' without 'claim_index': an answer-level verdict carries 'relevance'"
            )
        )
    if index is not None and "relevance" in obj:
        errors.append(
            BundleError(number, "'relevance' is about the answer: give it without 'claim_index'")
        )
    confidence = _confidence(number, obj, errors, about_claim=index is not None or index_refused)
    if len(errors) > before:
        return None

    record = VerdictRecord(
        line=number, answer_id=answer_id, claim_index=index, raw=raw, confidence=confidence
    )
    problems: list[str] = []
    if index is not None:
        record.label = _label(obj, problems)
    else:
        record.relevance = _relevance(obj, problems)
    record.evidence_ids = _evidence_ids(obj, problems)
    quote = obj.get("quote")
    if quote is not None and not isinstance(quote, str):
        problems.append(f"'quote' must be a string, got {kind_of(quote)}")
        quote = ""
    elif quote is not None and len(quote) > MAX_QUOTE:
        problems.append(too_long("quote", quote, MAX_QUOTE))
        quote = ""
    record.quote = quote or ""
    if status == Verdict.Status.TIMEOUT:
        record.status, record.label, record.relevance = Verdict.Status.TIMEOUT, "", None
    elif status == Verdict.Status.MALFORMED or problems:
        record.status, record.label, record.relevance = Verdict.Status.MALFORMED, "", None
        record.problem = "; ".join(problems) or "marked malformed in the file"
    return record


def _confidence(
    number: int, obj: dict, errors: list[BundleError], *, about_claim: bool
) -> float | None:
    """The verdict's optional `confidence`: the judge's probability that the claim is
    unsupported, a number in [0, 1]. Given by the pipeline that ran the judge (from its log
    probabilities or its own words), so a wrong one is a mistake of the file, not of the judge:
    an import error, named by line and field."""
    if "confidence" not in obj or obj["confidence"] is None:
        return None
    value = obj["confidence"]
    if not about_claim:
        errors.append(
            BundleError(
                number,
                "confidence: it is the probability that a claim is unsupported; give it with "
                "'claim_index'",
            )
        )
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.append(BundleError(number, f"confidence: must be a number, got {kind_of(value)}"))
        return None
    if not 0.0 <= value <= 1.0:
        errors.append(
            BundleError(
                number,
                f"confidence: must lie in [0, 1] (the probability that the claim is "
                f"unsupported), got {value!r}",
            )
        )
        return None
    return float(value)


def _label(obj: dict, problems: list[str]) -> str:
    if "label" not in obj:
        problems.append("no label")
        return ""
    label = obj["label"]
    if label is None:
        problems.append("label is null")
        return ""
    if label not in JUDGE_LABELS:
        problems.append(f"label {label!r} is outside the vocabulary ({', '.join(JUDGE_LABELS)})")
        return ""
    return label


def _relevance(obj: dict, problems: list[str]) -> int | None:
    if "relevance" not in obj:
        problems.append("no relevance")
        return None
    value = obj["relevance"]
    if value is None:
        problems.append("relevance is null")
        return None
    if isinstance(value, bool) or value not in RELEVANCE:
        problems.append(f"relevance {value!r} is not 0, 1 or 2")
        return None
    return int(value)


def _evidence_ids(obj: dict, problems: list[str]) -> list[str]:
    value = obj.get("evidence_ids")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append("'evidence_ids' must be a list of passage ids")
        return []
    if len(value) > MAX_EVIDENCE_IDS or any(len(v) > MAX_ID for v in value):
        problems.append(
            f"'evidence_ids' must be at most {MAX_EVIDENCE_IDS:,} passage ids of at most "
            f"{MAX_ID} characters"
        )
        return []
    return list(dict.fromkeys(value))


def quote_found(
    quote: str, evidence_ids: Iterable[str], passages: Mapping[str, str]
) -> bool | None:
    """Whether the quote occurs (whitespace-normalised) in one of the evidence passages; None
    when there is no quote. Ids that resolve to no passage cannot contain it."""
    if not quote.strip():
        return None
    return any(quote_occurs(quote, passages[pid]) for pid in evidence_ids if pid in passages)


def model_family(model: str) -> str:
    """A model's name without its pinned version: `acme/gen@2026-09-01` -> `acme/gen`."""
    return model.strip().lower().split("@", 1)[0]


def same_model(judge_model: str, generator_model: str) -> bool:
    """A judge grading answers of its own generator is no independent check. Another pinned
    version of the same model counts as the same model: it shares the blind spots."""
    return bool(generator_model.strip()) and model_family(judge_model) == model_family(
        generator_model
    )


def self_judged_counts(project: Project, runs: Iterable[JudgeRun]) -> dict[int, int]:
    """Run pk -> how many of its verdicts graded an answer of the judge's own generator.
    Two queries however many runs: the project's variants, verdict counts per variant."""
    runs = list(runs)
    models = dict(Variant.objects.filter(project=project).values_list("pk", "model"))
    counts = {run.pk: 0 for run in runs}
    rows = (
        Verdict.objects.filter(run__in=runs)
        .values("run_id", "answer__variant_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    by_pk = {run.pk: run for run in runs}
    for row in rows:
        run = by_pk[row["run_id"]]
        if same_model(run.model, models.get(row["answer__variant_id"], "")):
            counts[run.pk] += row["n"]
    return counts


@dataclass
class JudgeRunImportResult:
    run: JudgeRun
    verdicts: int = 0
    claim_verdicts: int = 0
    ok: int = 0
    malformed: int = 0
    timeouts: int = 0
    quotes_not_found: int = 0
    self_judged: int = 0

    def summary(self) -> str:
        parts = [
            f"{self.verdicts} verdicts ({self.claim_verdicts} about claims, "
            f"{self.verdicts - self.claim_verdicts} about answers)",
            f"{self.malformed} malformed",
            f"{self.timeouts} timed out",
            f"{self.quotes_not_found} quote(s) not found in their evidence",
        ]
        return ", ".join(parts)


# The cyclic collector paused, as for bundle imports: 100,000 verdicts took 7.2-8.4 s with
# it, 6.0-6.4 s without (bench database, big project).
@collector.paused()
@transaction.atomic
def import_judge_run(
    *,
    lines: Iterable[bytes | str],
    project: Project,
    name: str | None = None,
    user=None,
    source_name: str = "",
) -> JudgeRunImportResult:
    """Import a judge run into the project. All or nothing: raises BundleInvalid listing every
    problem by line. A run name already used in the project is an error; `name` renames."""
    answers = {
        answer_id: (pk, model)
        for answer_id, pk, model in Answer.objects.filter(project=project).values_list(
            "answer_id", "pk", "variant__model"
        )
    }
    claims: dict[tuple[int, int], int] = {}
    counts: dict[int, int] = dict.fromkeys((pk for pk, _ in answers.values()), 0)
    for pk, answer_pk, ordinal in Claim.objects.filter(answer__project=project).values_list(
        "pk", "answer_id", "ordinal"
    ):
        claims[(answer_pk, ordinal)] = pk
        counts[answer_pk] += 1
    parsed = parse_judge_run(
        lines,
        claim_counts={aid: counts[pk] for aid, (pk, _) in answers.items()},
        name=name,
    )
    record = parsed.run
    if not record.name:
        raise BundleInvalid([BundleError(record.line, "the run needs a name")])
    taken = JudgeRun.objects.filter(project=project, name=record.name).exists()
    if taken:
        raise BundleInvalid([_name_taken(record, project)])

    wanted = {pid for v in parsed.verdicts if v.quote.strip() for pid in v.evidence_ids}
    passages: dict[str, str] = {}
    ids = sorted(wanted)
    for start in range(0, len(ids), BATCH):
        passages.update(
            Passage.objects.filter(
                project=project, passage_id__in=ids[start : start + BATCH]
            ).values_list("passage_id", "text")
        )

    try:
        with transaction.atomic():
            run = JudgeRun.objects.create(
                project=project,
                name=record.name,
                model=record.model,
                model_version=record.model_version,
                prompt=record.prompt,
                prompt_sha256=record.prompt_sha256,
                settings=record.settings,
                source_name=safe_json.printable(source_name)[:255],
                imported_by=user if user is not None and user.is_authenticated else None,
            )
    except IntegrityError:  # a concurrent import took the name between the check and here
        raise BundleInvalid([_name_taken(record, project)]) from None

    result = JudgeRunImportResult(run=run)
    # Plain rows for COPY (annotate.common.bulk), not model instances for bulk_create: on PostgreSQL
    # Django sends each batch as arrays that psycopg quotes value by value in Python, and
    # 100,000 instances were most of the import's memory.
    ids = bulk.allocate_ids(Verdict, len(parsed.verdicts))
    rows = []
    for pk, v in zip(ids, parsed.verdicts, strict=True):
        answer_pk, generator = answers[v.answer_id]
        found = quote_found(v.quote, v.evidence_ids, passages)
        claim_pk = None if v.claim_index is None else claims[(answer_pk, v.claim_index)]
        rows.append(
            (
                pk,
                run.pk,
                answer_pk,
                claim_pk,
                v.line,
                v.raw,
                v.status,
                v.problem[:255],
                v.label,
                v.relevance,
                v.evidence_ids,
                v.quote,
                found,
                v.confidence if v.status == Verdict.Status.OK else None,
            )
        )
        result.verdicts += 1
        result.claim_verdicts += v.claim_index is not None
        result.ok += v.status == Verdict.Status.OK
        result.malformed += v.status == Verdict.Status.MALFORMED
        result.timeouts += v.status == Verdict.Status.TIMEOUT
        result.quotes_not_found += found is False
        result.self_judged += same_model(record.model, generator or "")
    bulk.insert_rows(Verdict, VERDICT_COLUMNS, rows)
    computed.touch(project)
    bulk.after_commit(analyze=[Verdict])
    return result


# A verdict row's columns: the model's, in its field order (the rows above follow it).
VERDICT_COLUMNS = tuple(field.column for field in Verdict._meta.concrete_fields)


def _name_taken(record: RunRecord, project: Project) -> BundleError:
    return BundleError(
        record.line,
        f"project '{project.slug}' already has a judge run named '{record.name}': "
        "import it under a new name (--name, or the name field of the upload form)",
    )
