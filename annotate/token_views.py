"""The page where a signed-in person creates, replaces and revokes their API token.

A token is shown once, in the response that created it; afterwards the page shows only its
first characters, so a token left on screen or in the browser history is not reusable."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    token = Token.objects.filter(user=request.user).first()
    new_key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            with transaction.atomic():
                Token.objects.filter(user=request.user).delete()
                token = Token.objects.create(user=request.user)
            new_key = token.key
        elif action == "revoke":
            Token.objects.filter(user=request.user).delete()
            messages.success(request, "Your API token was revoked: scripts using it now get 401.")
            return redirect("api_token")
        else:
            messages.error(request, "Unknown action.")
            return redirect("api_token")
    context = {"token": token, "new_key": new_key}
    return render(request, "annotate/tokens.html", context, status=201 if new_key else 200)
