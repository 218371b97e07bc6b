"""Gold from elsewhere (import_gold): one adjudicated label per answer -- a benchmark, an
expert's pass, an earlier campaign -- in the reviewer-label format without `reviewer`. Each
line is checked exactly as import_labels checks a reviewer's (annotate.imports.label_lines),
under the project's label schema, all or nothing; the labels are kept as gold with source
`imported` (annotate.gold), with the file's name and SHA-256 and the source's name as their
provenance (GoldImport).

One imported label per answer at a time. The same label again -- the same file imported a
second time, or another file that agrees -- is `unchanged` and writes nothing. A different
label for an answer that already holds imported gold is refused on its line unless the import
replaces (`replace=True`): then the answer's imported gold is the new file's, and the earlier
GoldImport row stays as the record of what was imported when.

Imported gold never enters agreement and is never shown to reviewers; reviewers may still
label the same answers, and their agreed or adjudicated gold then stands beside it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from annotate.common import bulk, collector, computed
from annotate.imports.label_lines import (
    ANSWER_LABEL_FIELDS,
    LINE_CHUNK,
    NamedAnswers,
    check_line,
    chunks,
    off_fields,
    unknown_fields,
)
from annotate.imports.lines import BundleError, BundleInvalid, JsonLines
from annotate.labelling.services import label_snapshot
from annotate.models import (
    Assignment,
    Claim,
    ClaimLabel,
    GoldImport,
    ImportedClaimGold,
    ImportedGold,
    Project,
)
from annotate.schema import LabelSchema

GOLD_FIELDS = {"answer_id", "claims", *ANSWER_LABEL_FIELDS}
SOURCE_MAX = GoldImport._meta.get_field("source").max_length
FILE_NAME_MAX = GoldImport._meta.get_field("file_name").max_length
NO_REVIEWER = (
    "'reviewer' has no place in gold from elsewhere: one label per answer, from no reviewer "
    "of this project (reviewers' labels import with import_labels)"
)


@dataclass
class GoldImportResult:
    """What an import_gold did: answers given imported gold for the first time (`created`),
    answers whose imported gold it replaced, lines equal to the imported gold already held
    (`unchanged`), and the claims written. `gold_import` is None when nothing was written."""

    source: str
    gold_import: GoldImport | None = None
    created: int = 0
    replaced: int = 0
    unchanged: int = 0
    claims: int = 0

    def summary(self) -> str:
        return (
            f"{self.created} answer(s) given imported gold from '{self.source}' "
            f"({self.claims} claim(s)), {self.replaced} replaced, {self.unchanged} unchanged"
        )


def import_gold(
    *,
    lines: Iterable[bytes | str],
    project: Project,
    source: str,
    file_name: str,
    user=None,
    replace: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> GoldImportResult:
    """Import one adjudicated label per answer as gold with source `imported`. All or
    nothing: raises BundleInvalid listing every problem by line. `source` names where the
    labels come from (a benchmark's name); `file_name` is kept with the SHA-256 of the
    lines' bytes (the file's hash when they are the file's lines, as read in binary).
    `progress(step, rows)`, if given, hears when the checking is done ("writing", 0)."""
    source = (source or "").strip()
    refused = []
    if project.state == Project.State.DRAFT:
        refused.append("Labelling is not open: open it first so that the claims are locked.")
    if not source:
        refused.append("Name the source of this gold (a benchmark, an expert, a campaign).")
    elif len(source) > SOURCE_MAX:
        refused.append(f"The source's name is {len(source)} characters; at most {SOURCE_MAX}.")
    if refused:
        raise BundleInvalid([BundleError(0, message) for message in refused])
    hashed = _Hashed(lines)
    result = GoldImportResult(source=source)
    # Model instances by the ten thousand, as in import_labels; the prefetched answers'
    # cycles are untied chunk by chunk (NamedAnswers.release).
    with collector.paused():
        pending = _checked(hashed, project, replace=replace, result=result)
        if progress:
            progress("writing", 0)
        if pending:
            result.gold_import = _write(
                project,
                pending,
                source=source,
                file_name=(file_name or "")[:FILE_NAME_MAX],
                sha256=hashed.digest.hexdigest(),
                user=user,
            )
    result.created = sum(not item.replaces for item in pending)
    result.replaced = sum(item.replaces for item in pending)
    result.claims = sum(len(item.claims) for item in pending)
    return result


class _Hashed:
    """The lines as they pass, with the SHA-256 of their bytes: the file's own hash once every
    line has been read (a binary file's lines keep their line ends)."""

    def __init__(self, lines: Iterable[bytes | str]):
        self.lines = lines
        self.digest = hashlib.sha256()

    def __iter__(self) -> Iterator[bytes | str]:
        for line in self.lines:
            self.digest.update(line if isinstance(line, bytes) else line.encode("utf-8"))
            yield line


@dataclass(slots=True)
class _Pending:
    """A checked line waiting to be written, by keys: its answer's pk, the answer-level
    values (_ANSWER_COLUMNS) and each claim's (claim pk, then _CLAIM_COLUMNS)."""

    line: int
    answer_pk: int
    values: tuple
    claims: list[tuple] = field(default_factory=list)
    replaces: bool = False


_ANSWER_COLUMNS = ("relevance", "abstention", "failure_labels", "note")
_CLAIM_COLUMNS = (
    "support",
    "severity",
    "requires_evidence",
    "evidence_ids",
    "evidence_quote",
    "citations",
    "note",
)


@dataclass(frozen=True, slots=True)
class _Held:
    """The imported gold an answer holds now: as a label snapshot, and where it came from."""

    snapshot: dict
    source: str
    file_name: str
    line: int


def _checked(
    lines: Iterable[bytes | str], project: Project, *, replace: bool, result: GoldImportResult
) -> list[_Pending]:
    """Every line checked; the lines to write, or BundleInvalid with every problem."""
    schema = project.schema
    named = NamedAnswers(project)
    errors: list[BundleError] = []
    pending: list[_Pending] = []
    seen: dict[str, int] = {}
    for chunk in chunks(JsonLines(lines, errors), LINE_CHUNK):
        found = named.read(obj.get("answer_id") for _, obj in chunk)
        held = _held([answer.pk for answer in found], schema)
        for number, obj in chunk:
            problems = [
                NO_REVIEWER if message == "unknown field 'reviewer'" else message
                for message in unknown_fields(obj, GOLD_FIELDS)
            ]
            problems += off_fields(obj, schema)
            answer_id = obj.get("answer_id")
            answer = named.answers.get(answer_id) if isinstance(answer_id, str) else None
            if answer is None:
                # Without its answer the claims cannot be checked; everything else was.
                problems.append(f"unknown answer_id {answer_id!r}")
                errors.extend(BundleError(number, p) for p in problems)
                continue
            checked = check_line(obj, answer, project=project, schema=schema)
            problems += checked.problems
            if answer_id in seen:
                first = seen[answer_id]
                problems.append(f"this answer is given gold twice (first on line {first})")
            seen.setdefault(answer_id, number)
            before = held.get(answer.pk)
            if before is not None and not problems:
                if label_snapshot(checked.assignment, checked.labels, schema) == before.snapshot:
                    result.unchanged += 1
                    continue
                if not replace:
                    problems.append(
                        f"this answer already holds other imported gold (from '{before.source}', "
                        f"{before.file_name} line {before.line}): import with replace "
                        "(--replace) to replace it"
                    )
            if problems:
                errors.extend(BundleError(number, p) for p in problems)
                continue
            assignment = checked.assignment
            pending.append(
                _Pending(
                    line=number,
                    answer_pk=answer.pk,
                    values=tuple(getattr(assignment, name) for name in _ANSWER_COLUMNS),
                    claims=[
                        (label.claim.pk, *(getattr(label, name) for name in _CLAIM_COLUMNS))
                        for label in checked.labels
                    ],
                    replaces=before is not None,
                )
            )
    named.release()
    if errors:
        raise BundleInvalid(errors)
    return pending


def _held(answer_pks: list[int], schema: LabelSchema) -> dict[int, _Held]:
    """The imported gold the answers hold now, as label snapshots to compare a line with:
    two queries, whatever the number of answers."""
    if not answer_pks:
        return {}
    claims: dict[int, list[ClaimLabel]] = {}
    for answer_pk, ordinal, *values in ImportedClaimGold.objects.filter(
        gold__answer_id__in=answer_pks
    ).values_list("gold__answer_id", "claim__ordinal", *_CLAIM_COLUMNS):
        fields = dict(zip(_CLAIM_COLUMNS, values, strict=True))
        label = ClaimLabel(claim=Claim(ordinal=ordinal), **fields)
        claims.setdefault(answer_pk, []).append(label)
    held = {}
    for answer_pk, line, source, file_name, *values in ImportedGold.objects.filter(
        answer_id__in=answer_pks
    ).values_list(
        "answer_id", "line", "gold_import__source", "gold_import__file_name", *_ANSWER_COLUMNS
    ):
        answer = Assignment(**dict(zip(_ANSWER_COLUMNS, values, strict=True)))
        snapshot = label_snapshot(answer, claims.get(answer_pk, []), schema)
        held[answer_pk] = _Held(snapshot, source, file_name, line)
    return held


def _write(
    project: Project, pending: list[_Pending], *, source: str, file_name: str, sha256: str, user
) -> GoldImport:
    """The checked lines, in bulk, with their GoldImport; the answers' earlier imported gold
    first removed where it is replaced. Two imports of gold for the same answers at the same
    time cannot both hold it (one row per answer): the later is refused, nothing written."""
    try:
        with transaction.atomic():
            computed.lock(project)  # before any other row: computed.lock says why
            gold_import = GoldImport.objects.create(
                project=project,
                source=source,
                file_name=file_name,
                sha256=sha256,
                imported_by=user,
                answer_count=len(pending),
                claim_count=sum(len(item.claims) for item in pending),
                replaced_count=sum(item.replaces for item in pending),
            )
            computed.touch(project)
            replaced = [item.answer_pk for item in pending if item.replaces]
            for start in range(0, len(replaced), 500):  # SQLite caps a query's parameters
                chunk = replaced[start : start + 500]
                ImportedClaimGold.objects.filter(gold__answer_id__in=chunk).delete()
                ImportedGold.objects.filter(answer_id__in=chunk).delete()
            ids = bulk.allocate_ids(ImportedGold, len(pending))
            bulk.insert_rows(
                ImportedGold,
                ("id", "gold_import_id", "answer_id", "line", *_ANSWER_COLUMNS),
                (
                    (pk, gold_import.pk, item.answer_pk, item.line, *item.values)
                    for pk, item in zip(ids, pending, strict=True)
                ),
            )
            claims = [
                (pk, *claim) for pk, item in zip(ids, pending, strict=True) for claim in item.claims
            ]
            claim_ids = bulk.allocate_ids(ImportedClaimGold, len(claims))
            bulk.insert_rows(
                ImportedClaimGold,
                ("id", "gold_id", "claim_id", *_CLAIM_COLUMNS),
                ((pk, *claim) for pk, claim in zip(claim_ids, claims, strict=True)),
            )
    except IntegrityError as exc:
        raise BundleInvalid(
            [
                BundleError(
                    0,
                    "Another import gave some of these answers gold while this file was being "
                    "checked; nothing was written. Import the file again.",
                )
            ]
        ) from exc
    bulk.after_commit(
        analyze=[ImportedGold, ImportedClaimGold],
        vacuum=[ImportedGold, ImportedClaimGold] if replaced else [],
    )
    return gold_import
