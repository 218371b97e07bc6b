"""The lead's Webhooks page: the project's endpoints (add, change, delete, send a test event),
a new secret shown once, and the delivery log. Thin: a form parses, one service decides; an
htmx request gets the page's panel."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest
from django.urls import reverse

from annotate.common.errors import ServiceError
from annotate.common.pages import go, render_page
from annotate.common.roles import project_view
from annotate.models import Role, WebhookDelivery
from annotate.webhooks import selectors, services
from annotate.webhooks.forms import EndpointChangeForm, EndpointForm


def _url(project) -> str:
    return reverse("webhooks", kwargs={"slug": project.slug})


@project_view(Role.LEAD)
def webhooks(request, project, role):
    if request.method != "POST":
        return _page(request, project, role, EndpointForm())
    action = request.POST.get("action")
    if action == "add":
        return _add(request, project, role)
    if action == "resend":
        delivery = (
            selectors.delivery_log(project).filter(pk=_number(request.POST.get("delivery"))).first()
        )
        if delivery is None:
            raise Http404("Not found")
        services.resend_delivery(delivery=delivery)
        messages.success(request, "Sent again: see its row in the log.")
        return go(request, _url(project))
    endpoint = selectors.endpoint_of(project, request.POST.get("endpoint"))
    if action not in ("test", "delete"):
        return HttpResponseBadRequest("Unknown action.")
    if endpoint is None:
        raise Http404("Not found")
    if action == "test":
        services.send_test_event(endpoint=endpoint, by=request.user)
        messages.success(request, f"Test event queued for {endpoint.url}: see the log below.")
    else:
        services.delete_endpoint(endpoint=endpoint)
        messages.success(request, f"Deleted {endpoint.url} and its deliveries.")
    return go(request, _url(project))


def _number(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _add(request, project, role):
    form = EndpointForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            endpoint = services.register_endpoint(
                project=project,
                url=data["url"],
                events=data["events"],
                description=data["description"],
                by=request.user,
            )
        except services.EndpointInvalid as exc:
            form.add_error(exc.field, str(exc))
        else:
            messages.success(request, f"Added {endpoint.url}.")
            # Rendered, not redirected to: the secret is shown this once.
            return _page(request, project, role, EndpointForm(), new_secret=endpoint)
    return _page(request, project, role, form, status=400)


def _page(request, project, role, form, *, new_secret=None, status=200):
    status_filter = request.GET.get("status", "")
    if status_filter not in WebhookDelivery.Status.values:
        status_filter = ""
    context = {
        "project": project,
        "role": role,
        "current": "webhooks",
        "form": form,
        "endpoints": list(selectors.endpoints_of(project)),
        "deliveries": list(
            selectors.delivery_log(project, status=status_filter or None)[: selectors.LOG_SIZE]
        ),
        "log_size": selectors.LOG_SIZE,
        "status_filter": status_filter,
        "statuses": WebhookDelivery.Status.choices,
        "new_secret": new_secret,
    }
    return render_page(
        request, "annotate/lead/webhooks.html", context, partial="webhooks-panel", status=status
    )


@project_view(Role.LEAD)
def webhook_edit(request, project, role, pk):
    endpoint = selectors.endpoint_of(project, pk)
    if endpoint is None:
        raise Http404("Not found")
    if request.method != "POST":
        initial = {
            "url": endpoint.url,
            "description": endpoint.description,
            "events": endpoint.events,
            "active": endpoint.active,
        }
        return _edit_page(request, project, role, endpoint, EndpointChangeForm(initial=initial))
    form = EndpointChangeForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            endpoint = services.update_endpoint(
                endpoint=endpoint,
                url=data["url"],
                events=data["events"],
                description=data["description"],
                active=data["active"],
                rotate_secret=data["rotate_secret"],
            )
        except ServiceError as exc:
            form.add_error(getattr(exc, "field", None), str(exc))
        else:
            messages.success(request, f"Saved {endpoint.url}.")
            if data["rotate_secret"]:
                return _edit_page(
                    request,
                    project,
                    role,
                    endpoint,
                    EndpointChangeForm(initial={**data, "rotate_secret": False}),
                    True,
                )
            return go(request, _url(project))
    return _edit_page(request, project, role, endpoint, form, status=400)


def _edit_page(request, project, role, endpoint, form, new_secret=False, status=200):
    context = {
        "project": project,
        "role": role,
        "current": "webhooks",
        "endpoint": endpoint,
        "form": form,
        "new_secret": endpoint if new_secret else None,
    }
    return render_page(
        request, "annotate/lead/webhook_edit.html", context, partial="edit-panel", status=status
    )
