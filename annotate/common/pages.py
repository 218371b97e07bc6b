"""What the lead's pages share: a page or, for htmx, its named partial; a redirect after a
POST that htmx follows too; a form's posted data."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect


def render_page(request, template: str, context: dict, *, partial: str | None = None, status=200):
    """The page, or for htmx its named partial (htmx swaps only 2xx responses)."""
    if request.htmx and partial:
        return render(request, f"{template}#{partial}", context)
    return render(request, template, context, status=status)


def go(request, url: str):
    """Redirect after a successful POST; htmx is told to navigate instead of swapping."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def posted(request) -> tuple:
    """Form data for a POST (even an empty one, which must still be validated), else none."""
    if request.method == "POST":
        return request.POST, request.FILES
    return None, None
