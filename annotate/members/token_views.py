"""The page where a signed-in person creates and revokes their API tokens.

A token is shown once, in the response that created it; afterwards the page lists only its
first characters, created and expiry dates, so a token left on screen or in the browser
history is not reusable (and the page is never cached: config.middleware.NoStoreMiddleware).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotate.members import tokens as token_service


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    new_key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            new_key = token_service.create_token(user=request.user)
        elif action == "revoke":
            token_id = request.POST.get("token", "")
            if token_service.revoke_token(user=request.user, token_id=token_id):
                messages.success(request, "Token revoked: scripts using it now get 401.")
            else:
                messages.error(request, "That token was already revoked or has expired.")
            return redirect("api_token")
        elif action == "revoke_all":
            count = token_service.revoke_all(user=request.user)
            messages.success(request, f"{count} token{'s' if count != 1 else ''} revoked.")
            return redirect("api_token")
        else:
            messages.error(request, "Unknown action.")
            return redirect("api_token")
    context = {
        "tokens": token_service.tokens_for(request.user),
        "new_key": new_key,
        "token_days": token_service.token_days(),
    }
    return render(request, "annotate/tokens.html", context, status=201 if new_key else 200)
