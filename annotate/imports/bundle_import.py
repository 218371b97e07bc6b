"""Importing bundles: parse, plan (new / changed / unchanged, or refuse), write in bulk."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

from django.db import transaction

from annotate.common import bulk, collector, computed, safe_json
from annotate.common.errors import ServiceError
from annotate.imports.bundle_plan import (
    DeletionsNotConfirmed,
    ImportResult,
    deletions_of,
    plan_import,
)
from annotate.imports.bundle_write import write_import
from annotate.imports.bundles import parse_bundle
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.imports.records import Bundle
from annotate.models import (
    Answer,
    Assignment,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Passage,
    Project,
    RetrievedPassage,
)
from annotate.schema import LabelSchema


def _existing(project: Project | None) -> dict[str, dict]:
    """Id -> (pk, content_hash) for what the project already holds."""
    if project is None:
        return {k: {} for k in ("passage", "variant", "case", "answer", "judgment", "sample")}
    return {
        "passage": {
            pid: (pk, h, text)
            for pk, pid, h, text in project.passages.values_list(
                "pk", "passage_id", "content_hash", "text"
            )
        },
        "variant": {
            n: (pk, h) for pk, n, h in project.variants.values_list("pk", "name", "content_hash")
        },
        "case": {
            c: (pk, h) for pk, c, h in project.cases.values_list("pk", "case_id", "content_hash")
        },
        "answer": {
            a: (pk, h)
            for pk, a, h in project.answers.values_list("pk", "answer_id", "content_hash")
        },
        # The database's unique (case, variant, sample), mirrored so that a new answer id for
        # a generation the project already holds is a line error, not an IntegrityError.
        "sample": {
            (c, v, s): a
            for a, c, v, s in project.answers.values_list(
                "answer_id", "case__case_id", "variant__name", "sample"
            )
        },
        "judgment": {
            (c, p): (pk, g)
            for pk, c, p, g in Judgment.objects.filter(case__project=project).values_list(
                "pk", "case__case_id", "passage__passage_id", "grade"
            )
        },
    }


def _labelled_answer_pks(project: Project | None) -> set[int]:
    if project is None:
        return set()
    return set(
        Assignment.objects.filter(answer__project=project).values_list("answer_id", flat=True)
    )


@collector.paused()  # see annotate.common.collector: 7.04 -> 5.98 s for the bench's big bundle
def import_bundle(
    *,
    lines: Iterable[bytes | str],
    project_slug: str,
    name: str | None = None,
    replace: bool = False,
    confirm_deletions: bool | list[str] = False,
    progress: Callable[[str, int], None] | None = None,
) -> ImportResult:
    """Import a bundle into a project, creating the project if needed. All or nothing:
    raises BundleInvalid with every problem found and writes nothing.

    A `replace` that would delete anything -- the answers it replaces take their claims and
    every judge verdict about them along -- raises DeletionsNotConfirmed listing it all, and
    writes nothing, unless `confirm_deletions`: True, or the very lines a lead was shown
    (Deletions.lines()) -- a confirmation given for those does not cover what the replace
    would delete now if that has changed since (another judge run's verdicts, say)."""
    project = Project.objects.filter(slug=project_slug).first()
    if project is None:
        _check_new_project(project_slug, name)
    existing = _existing(project)
    bundle = parse_bundle(
        lines,
        corpus_version=project.corpus_version if project else None,
        known_passages={pid: v[2] for pid, v in existing["passage"].items()},
        known_cases=existing["case"].keys(),
        progress=(lambda n: progress("parsed", n)) if progress else None,
    )
    labelled = _labelled_answer_pks(project)
    plan = plan_import(bundle, existing, project, replace=replace, labelled=labelled)
    if plan.changed["answer"] and confirm_deletions is not True:
        stale = [existing["answer"][a.answer_id][0] for a in plan.changed["answer"]]
        deletions = deletions_of(stale, plan.changed["answer"])
        if confirm_deletions != deletions.lines():
            raise DeletionsNotConfirmed(deletions)
    with transaction.atomic():
        created_project = project is None
        schema_before = LabelSchema()
        if project is None:
            project = Project.objects.create(
                slug=project_slug,
                name=name or bundle.name or project_slug,
                corpus_version=bundle.corpus_version,
                label_schema=(bundle.label_schema or LabelSchema()).as_dict(),
            )
        else:
            state_read = project.state
            project = Project.objects.select_for_update().get(pk=project.pk)
            _still_as_planned(project, state_read, existing, plan)
            schema_before = project.schema
            if bundle.label_schema is not None and bundle.label_schema != project.schema:
                project.label_schema = bundle.label_schema.as_dict()
                project.save(update_fields=["label_schema"])
        result = ImportResult(project=project, created_project=created_project)
        if bundle.label_schema is not None and bundle.label_schema != schema_before:
            result.label_schema_change = (schema_before, bundle.label_schema)
        write_import(project, bundle, existing, plan, result, progress)
        result.counts["claim"]["unchanged"] = _claims_kept(bundle, existing, plan)
        # Cases, claims, variants or the schema may have changed under any answer.
        computed.touch(project, content=True, answers=computed.ALL)
        _maintain(result)
    return result


def _claims_kept(bundle: Bundle, existing, plan) -> int:
    """The claims of the file's answers that the project held and keeps (unchanged or
    corrected in place), so that a re-import says 'claims: 120 unchanged', not 'none'."""
    replaced = {record.answer_id for record in plan.changed["answer"]}
    pks = sorted(
        existing["answer"][answer_id][0]
        for answer_id in bundle.answers
        if answer_id in existing["answer"] and answer_id not in replaced
    )
    return sum(
        Claim.objects.filter(answer_id__among=pks[start : start + 500]).count()
        for start in range(0, len(pks), 500)  # SQLite caps the parameters of one query
    )


def _still_as_planned(project: Project, state_read: str, existing: dict, plan) -> None:
    """The plan was made from the project as it was read, before the file was parsed (which
    takes a while for a big one), without locks: a lead may have opened labelling meanwhile,
    or a reviewer taken an answer this replace deletes. Under the project's row lock, with
    the replaced answers' rows locked too (next_task creates an assignment only while holding
    its answer's row, and skips rows locked here), refuse if either happened: deleting the
    answer would delete the reviewer's labels, and what the plan allows in set-up differs
    from what it allows once labelling is open."""
    if project.state != state_read:
        raise ServiceError(
            f"The project changed from {state_read} to {project.state} while this file was "
            "being read: nothing was imported; import it again."
        )
    stale = [existing["answer"][a.answer_id][0] for a in plan.changed["answer"]]
    if not stale:
        return
    list(Answer.objects.select_for_update().filter(pk__in=stale).values_list("pk"))
    taken = sorted(
        Answer.objects.filter(pk__in=stale, assignments__isnull=False)
        .values_list("answer_id", flat=True)
        .distinct()
    )
    if taken:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise ServiceError(
            f"A reviewer took {shown} while this file was being read: replacing it would "
            "delete their labels. Nothing was imported; import the file again, and it is "
            "checked against the labelled answer."
        )


def _maintain(result: ImportResult) -> None:
    """Statistics for the tables this import filled, and a vacuum of those it rewrote, once
    it commits; nothing when nothing was written (a re-import of the same file)."""
    counts = result.counts
    wrote = {kind: counts.get(kind, Counter()) for kind in counts}
    changed = any(c["created"] or c["replaced"] or c.get("corrected") for c in wrote.values())
    if not changed:
        return
    filled = [Passage, Case, Evidence, Answer, RetrievedPassage, Claim, Citation, Judgment]
    rewritten = []
    if any(c["replaced"] or c.get("corrected") for c in wrote.values()):
        rewritten = [Passage, Case, Evidence, Answer, RetrievedPassage, Claim, Citation]
    if counts.get("answer", Counter())["created"]:
        # Late answers renumber the untaken ones; and new answers' pages are not yet marked
        # all-visible, which only a vacuum does: until then the reviewer's progress count is
        # no index-only scan of the open queue (measured: 8.4 ms instead of 1.2 ms per
        # labelling page on the 10k project after an import with ANALYZE alone).
        rewritten.append(Answer)
    bulk.after_commit(analyze=filled, vacuum=rewritten)


def _check_new_project(slug: str, name: str | None) -> None:
    """The new project's slug and name, as their columns and URLs take them (the API's
    serializers check the same; a script calling the command does not pass through them)."""
    problems = []
    slug_field = Project._meta.get_field("slug")
    if not isinstance(slug, str) or not _SLUG.fullmatch(slug):
        problems.append("the project slug may hold only letters, digits, hyphens and underscores")
    elif len(slug) > slug_field.max_length:
        problems.append(f"the project slug is longer than {slug_field.max_length} characters")
    name_limit = Project._meta.get_field("name").max_length
    if name is not None and len(name) > name_limit:
        problems.append(f"the project name is longer than {name_limit} characters")
    elif name is not None and safe_json.text_problem(name):
        problems.append(f"the project name: {safe_json.text_problem(name)}")
    if problems:
        raise BundleInvalid([BundleError(0, p) for p in problems])


_SLUG = re.compile(r"[-a-zA-Z0-9_]+")
