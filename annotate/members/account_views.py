"""The login page's answer to a locked-out login."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import render


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
