"""The gold page (how much of the gold set is agreed, adjudicated, imported or pending, and the
download's filters) and the download itself, streamed, or written by a worker when it is too
long for a request."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotate.checks import selectors as check_selectors
from annotate.checks.forms import CheckFileForm
from annotate.common.computed import reports_of
from annotate.common.jsonl import jsonl
from annotate.common.roles import project_view
from annotate.gold import exports
from annotate.gold.forms import GoldExportForm
from annotate.gold.parquet import parquet_file
from annotate.gold.selectors import imported_alone, pair_summary
from annotate.models import Role
from annotate.releases.forms import ReleaseForm
from annotate.releases.selectors import releases_of


@require_http_methods(["GET"])
@project_view(Role.LEAD)
def gold_page(request, project, role):
    """The gold set before it is downloaded: how much is agreed, adjudicated and pending,
    the download's filters, and the releases made of it."""
    return render(request, "annotate/gold.html", gold_page_context(request, project, role))


# Decided answers listed on the page with a button each; the rest by the bulk action.
CHECK_CANDIDATES_SHOWN = 20


def gold_page_context(request, project, role, *, release_form=None, check_file_form=None) -> dict:
    """The gold page's context; `release_form` is a refused release's form, shown with its
    errors (annotate.releases.views), `check_file_form` a refused check file's
    (annotate.checks.views)."""
    form = GoldExportForm(request.GET or None)
    reports = reports_of(project)  # the revision read once for both
    checks = list(check_selectors.checks_of(project))
    candidates, decided_unmarked = check_selectors.decided_unmarked(
        project,
        limit=CHECK_CANDIDATES_SHOWN,
        marked={check.answer_id for check in checks},
        reports=reports,
    )
    return {
        "project": project,
        "role": role,
        "form": form,
        # Every pair of the project derived (1.1-1.3 s at 10,000 answers), kept and shared
        # with the adjudication queue; after a submission or a decision only the answers
        # that changed are derived again (PairShares). Beside them, the items
        # whose gold is imported alone.
        "counts": exports.gold_counts(
            project,
            summary=pair_summary(project, reports),
            imported=imported_alone(project, reports),
        ),
        "written_by_worker": exports.gold_size(project) > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS,
        "releases": list(releases_of(project)),
        "release_form": release_form or ReleaseForm(),
        "checks": checks,
        "check_candidates": candidates,
        "decided_unmarked": decided_unmarked,
        "check_file_form": check_file_form or CheckFileForm(),
    }


@project_view(Role.LEAD)
def gold_download(request, project, role, fmt):
    if fmt not in exports.FORMATS:
        raise Http404("Not found")
    form = GoldExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()), status=400
        )
    size = exports.gold_size(project)
    if size > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS:
        # Too long to stream within a request: a worker writes the file and its page offers
        # the download (the same file again while the labels stay as they are).
        job = exports.start_gold_export(
            project=project, user=request.user, fmt=fmt, filters=form.options(), rows=size
        )
        return redirect("job", job_id=job.pk)
    rows = exports.gold_rows(project, **form.options())
    filename = f"{project.slug}-gold.{fmt}"
    if fmt == "parquet":
        return FileResponse(
            parquet_file(rows),
            as_attachment=True,
            filename=filename,
            content_type=exports.content_type(fmt),
        )
    body = jsonl(rows) if fmt == "jsonl" else exports.gold_csv(rows)
    response = StreamingHttpResponse(body, content_type=exports.content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
