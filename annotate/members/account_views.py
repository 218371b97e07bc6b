"""What a person sees about their own login."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from annotate import selectors, services


def locked_out(request, original_response=None, credentials=None):
    """django-axes' answer to a locked-out login (/login/ and /admin/login/): the login page
    again, saying why and for how long, with 429. The same words whether or not the username
    exists, so the lockout reveals no account."""
    form = AuthenticationForm(request, initial={"username": (credentials or {}).get("username")})
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    context = {
        "form": form,
        "locked_out": True,
        "cooloff_minutes": minutes,
        "next": request.POST.get("next") or request.GET.get("next", ""),
    }
    return render(request, "registration/login.html", context, status=429)


class PreferencesForm(forms.Form):
    single_key_shortcuts = forms.BooleanField(
        required=False,
        label="Single-key shortcuts on the labelling screen",
        help_text="Letters and digits (1 2 3, j k, s, e …) act on the task. Turn them off if "
        "you use speech input or press keys by accident; Enter and the arrow keys still work.",
    )


@login_required
@require_http_methods(["GET", "POST"])
def preferences(request):
    back = request.POST.get("next") or request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            services.set_preferences(
                user=request.user, single_key_shortcuts=form.cleaned_data["single_key_shortcuts"]
            )
            messages.success(request, "Preferences saved.")
            return redirect(back or "preferences")
    else:
        form = PreferencesForm(
            initial={"single_key_shortcuts": selectors.single_key_shortcuts(request.user)}
        )
    return render(request, "annotate/preferences.html", {"form": form, "next": back})
