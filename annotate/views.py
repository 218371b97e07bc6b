from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotate import selectors


@login_required
def home(request):
    return render(request, "annotate/home.html", {"projects": selectors.projects_for(request.user)})
