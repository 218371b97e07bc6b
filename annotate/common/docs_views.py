"""The format docs as pages for signed-in users (/docs/<name>/), and the files they point to:
an example bundle to download and the gold export's JSON Schema.

Only the names in DOCS are served, read from the repository's docs/ folder and rendered by
annotate.common.markdown (markdown-it-py, raw HTML off: see there why it is not shown raw)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotate.common import markdown

DOCS_DIR = Path(settings.BASE_DIR) / "docs"
EXAMPLE_BUNDLE = Path(settings.BASE_DIR) / "fixtures" / "small.jsonl"
# name -> title, in the order the docs list them
DOCS = {
    "bundle-format": "Bundle format",
    "judge-runs": "Model-judge runs",
    "calibration": "Calibration: labels, planner and gate",
    "gold-export": "Gold export",
    "ragas": "Ragas datasets",
    "api": "REST API",
    "webhooks": "Webhooks",
}
FILES = {
    "example-bundle.jsonl": (EXAMPLE_BUNDLE, "application/x-ndjson"),
    "gold-export.schema.json": (DOCS_DIR / "gold-export.schema.json", "application/json"),
}
_DOC_LINK = re.compile(r"^(?P<name>[a-z-]+)\.md(?P<anchor>#[\w-]+)?$")


def resolve(href: str) -> str | None:
    """Where a link in a doc may point: the web, another doc, a served file, an anchor."""
    if href.startswith(("https://", "http://")):
        return href
    if href.startswith("#"):
        return href if re.fullmatch(r"#[\w-]+", href) else None
    if (match := _DOC_LINK.match(href)) and match.group("name") in DOCS:
        return reverse("doc", kwargs={"name": match.group("name")}) + (match.group("anchor") or "")
    if href in FILES:
        return reverse("doc_file", kwargs={"filename": href})
    return None


@require_GET
@login_required
def doc(request, name: str):
    if name not in DOCS:
        raise Http404("Not found")
    text = (DOCS_DIR / f"{name}.md").read_text(encoding="utf-8")
    return render(
        request,
        "docs/page.html",
        {
            "name": name,
            "title": DOCS[name],
            "body": markdown.render(text, resolve=resolve),
            "docs": DOCS,
        },
    )


@require_GET
@login_required
def doc_file(request, filename: str):
    """The example bundle (fixtures/small.jsonl, a complete small project) or the schema."""
    if filename not in FILES:
        raise Http404("Not found")
    path, content_type = FILES[filename]
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=filename, content_type=content_type
    )
