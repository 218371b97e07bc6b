"""Importing Ragas evaluation datasets: read and check the rows (annotate.imports.ragas), turn them
into bundle lines, and import those with import_bundle, so every bundle rule, the
all-or-nothing write and re-import idempotency hold as they do for a bundle."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

from django.db import transaction

from annotate.imports import ragas
from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundle_plan import ImportResult
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.models import Project
from annotate.projects.creation import import_as_new_project
from annotate.schema import LabelSchema


@dataclass
class RagasImportResult(ImportResult):
    samples: int = 0
    passed_over: list[str] = field(default_factory=list)  # Ragas columns a bundle cannot hold


def import_ragas(
    *,
    lines: Iterable[bytes | str],
    project_slug: str,
    variant: str,
    name: str | None = None,
    label_schema: LabelSchema | None = None,
    replace: bool = False,
    confirm_deletions: bool | list[str] = False,
    progress: Callable[[str, int], None] | None = None,
) -> RagasImportResult:
    """Import a Ragas dataset (JSONL or CSV) as the answers of `variant`, creating the project
    if needed. All or nothing: raises BundleInvalid with every problem, numbered by the
    dataset's own lines (JSONL) or rows (CSV), and writes nothing.

    `label_schema`, when given, becomes the project's, as a bundle header's would (a Ragas
    file has no header to carry one); refused once labelling is open unless it is the
    project's own."""
    problem = ragas.check_variant(variant)
    if problem:
        raise BundleInvalid([BundleError(0, problem)])
    project = Project.objects.filter(slug=project_slug).first()
    problem = label_schema_problem(project=project, schema=label_schema)
    if problem:
        raise BundleInvalid([BundleError(0, problem)])
    dataset = ragas.read_dataset(lines)
    if project is None:
        corpus_version = dataset.corpus_version()
    else:  # a header only to carry the schema: it must name the project's corpus
        corpus_version = project.corpus_version if label_schema is not None else None
    conversion = ragas.to_bundle(
        dataset,
        variant=variant,
        corpus_version=corpus_version,
        label_schema=label_schema.as_dict() if label_schema is not None else None,
        known_passages=dict(project.passages.values_list("passage_id", "text")) if project else {},
        known_cases=set(project.cases.values_list("case_id", flat=True)) if project else set(),
    )
    variant_held = project is not None and project.variants.filter(name=variant).exists()
    if project is not None and not project.is_draft:
        _refuse_new_answers(project, conversion)
    try:
        result = import_bundle(
            lines=conversion.lines,
            project_slug=project_slug,
            name=name,
            replace=replace,
            confirm_deletions=confirm_deletions,
            progress=progress,
        )
    except BundleInvalid as exc:
        raise conversion.errors_in_dataset(exc) from exc
    # What the file names that the project already held as it is: no bundle line was made
    # for it, so the bundle import did not count it.
    for kind, n in conversion.held.items():
        result.counts[kind]["unchanged"] += n
    if variant_held:
        result.counts["variant"]["unchanged"] += 1
    return RagasImportResult(
        **{f.name: getattr(result, f.name) for f in fields(ImportResult)},
        samples=len(dataset.rows),
        passed_over=dataset.passed_over,
    )


def label_schema_problem(*, project: Project | None, schema: LabelSchema | None) -> str | None:
    """Why `schema` cannot be given to an import into `project`, or None: a project's schema
    is locked once labelling opens (labels exist under it). Checked when an upload is
    accepted, to say so on its field at once, and again by the import."""
    if project is None or schema is None or project.is_draft or schema == project.schema:
        return None
    return (
        f"the label schema given ({schema.describe()}) differs from the project's "
        f"({project.schema.describe()}), which is locked once labelling opens: give the "
        "project's schema, or none"
    )


def _refuse_new_answers(project: Project, conversion: ragas.Conversion) -> None:
    """Answers new to an open project would need their claims reviewed before labelling, and
    a Ragas sample brings none. Re-importing what the project holds stays a no-op."""
    held = set(project.answers.values_list("answer_id", flat=True))
    new = [line for answer_id, line in conversion.answers.items() if answer_id not in held]
    if new:
        raise BundleInvalid(
            [
                BundleError(
                    line,
                    "labelling is open in this project, and a Ragas sample has no claims for "
                    "a lead to review first: import new answers into a project in set-up",
                    conversion.unit,
                )
                for line in new
            ]
        )


@transaction.atomic
def import_ragas_new_project(
    *,
    lines: Iterable[bytes | str],
    variant: str,
    slug: str,
    name: str | None,
    user,
    label_schema: LabelSchema | None = None,
    reimport: bool = True,
    progress: Callable[[str, int], None] | None = None,
) -> RagasImportResult:
    """import_ragas as a new project whose lead is `user`, under import_new_project's rules."""
    return import_as_new_project(
        slug=slug,
        user=user,
        reimport=reimport,
        load=lambda: import_ragas(
            lines=lines,
            project_slug=slug,
            variant=variant,
            name=name,
            label_schema=label_schema,
            progress=progress,
        ),
    )
