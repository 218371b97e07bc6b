"""The releases on the Gold page: making one (leads only, as the page), and downloading one
(JSONL as it was frozen, CSV or Parquet made from it)."""

from __future__ import annotations

from django.contrib import messages
from django.http import FileResponse, Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotate.common.roles import project_view
from annotate.gold.exports import content_type
from annotate.gold.views import gold_page_context
from annotate.models import GoldRelease, Role
from annotate.releases import selectors
from annotate.releases.forms import ReleaseForm
from annotate.releases.services import ReleaseRefused, start_release


@require_POST
@project_view(Role.LEAD)
def release_new(request, project, role):
    form = ReleaseForm(request.POST)
    if form.is_valid():
        try:
            made = start_release(project=project, user=request.user, **form.options())
        except ReleaseRefused as exc:
            form.add_error("name", str(exc))
        else:
            if not isinstance(made, GoldRelease):  # a large set: a worker makes it
                return redirect("job", job_id=made.pk)
            messages.success(
                request, f"Release {made.name} made: {made.row_count} rows, frozen as they are."
            )
            return redirect(reverse("gold", args=[project.slug]) + "#releases")
    context = gold_page_context(request, project, role, release_form=form)
    return render(request, "annotate/gold.html", context, status=400)


@require_GET
@project_view(Role.LEAD)
def release_download(request, project, role, name, fmt):
    release = selectors.release_named(project, name)
    if release is None or fmt not in selectors.FORMATS:
        raise Http404("Not found")
    return download(release, fmt, slug=project.slug)


def download(release, fmt: str, *, slug: str):
    """A release's file in `fmt` (jsonl: the frozen bytes, with their length; csv and parquet
    made from them), as an attachment: the page's download and the API's."""
    filename = f"{slug}-gold-{release.name}.{fmt}"
    if fmt == "parquet":
        return FileResponse(
            selectors.release_parquet(release),
            as_attachment=True,
            filename=filename,
            content_type=content_type(fmt),
        )
    body = selectors.jsonl_chunks(release) if fmt == "jsonl" else selectors.release_csv(release)
    response = StreamingHttpResponse(body, content_type=content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if fmt == "jsonl":
        response["Content-Length"] = str(release.size)
    return response
