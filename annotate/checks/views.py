"""A lead's gold checks on the pages: marking answers (one, the selected, every decided one)
from the Gold page and the adjudication screen, unmarking, importing a file of answer ids,
and the check rate on the guidelines page."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotate.checks import services
from annotate.checks.forms import CheckFileForm, CheckRateForm
from annotate.common.errors import ServiceError
from annotate.common.roles import project_view
from annotate.gold.views import gold_page_context
from annotate.models import Role
from annotate.projects.forms import GuidelinesForm


def _back(request, project) -> str:
    """Where a button posted from goes back to: its `next` (a page of this site), else the
    Gold page's checks."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("gold", args=[project.slug]) + "#checks"


def _words(n: int) -> str:
    return f"{n} answer{'' if n == 1 else 's'}"


@require_POST
@project_view(Role.LEAD)
def mark(request, project, role):
    """Mark the posted answers (`answers`, their ids), or every decided one (`all_decided`).
    A row's own button posts its answer beside the ticked ones: an answer named twice is
    one."""
    names = list(dict.fromkeys(request.POST.getlist("answers")))
    try:
        if request.POST.get("all_decided"):
            marked = services.mark_all_decided(project=project, lead=request.user)
        else:
            marked = services.mark_checks(project=project, lead=request.user, answer_ids=names)
    except services.ChecksRefused as exc:
        messages.error(
            request,
            "Nothing marked: " + "; ".join(f"{names[i]}: {m}" for i, m in exc.problems),
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Marked {_words(marked)} as checks.")
    return redirect(_back(request, project))


@require_POST
@project_view(Role.LEAD)
def unmark(request, project, role):
    names = request.POST.getlist("answers")
    try:
        removed = services.unmark_checks(project=project, answer_ids=names)
    except services.ChecksRefused as exc:
        messages.error(
            request, "Nothing changed: " + "; ".join(f"{names[i]}: {m}" for i, m in exc.problems)
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{_words(removed).capitalize()} no longer checks.")
    return redirect(_back(request, project))


@require_POST
@project_view(Role.LEAD)
def import_file(request, project, role):
    """A file of answer ids, all or nothing; a refused file is shown on the Gold page with
    every problem by line."""
    form = CheckFileForm(request.POST, request.FILES)
    problems: list[str] = []
    if form.is_valid():
        try:
            marked = services.import_checks(
                project=project, lead=request.user, lines=form.cleaned_data["file"]
            )
        except services.ChecksRefused as exc:
            problems = exc.lines()
        except ServiceError as exc:
            problems = [str(exc)]
        else:
            messages.success(request, f"Marked {_words(marked)} as checks from the file.")
            return redirect(reverse("gold", args=[project.slug]) + "#checks")
    context = gold_page_context(request, project, role, check_file_form=form)
    context["check_problems"] = problems
    return render(request, "annotate/gold.html", context, status=400)


@require_POST
@project_view(Role.LEAD)
def rate(request, project, role):
    """The check rate, from the guidelines page."""
    form = CheckRateForm(request.POST)
    if form.is_valid():
        try:
            services.set_check_rate(project=project, rate=form.cleaned_data["check_rate"])
        except ServiceError as exc:
            form.add_error("check_rate", str(exc))
        else:
            messages.success(request, f"Check rate set to {form.cleaned_data['check_rate']:g}.")
            return redirect(reverse("guidelines", args=[project.slug]) + "#checks")
    context = {
        "project": project,
        "role": role,
        "form": GuidelinesForm(project=project),
        "rate_form": form,
        "current": "guidelines",
    }
    return render(request, "annotate/lead/guidelines.html", context, status=400)
