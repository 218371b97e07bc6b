"""The format docs as pages for signed-in users, rendered safely; the example bundle to
download is a real bundle; and the pages that take or give files link to their format."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from annotate.common import markdown
from annotate.common.docs_views import DOCS, resolve
from annotate.imports.bundle_import import import_bundle
from tests.conftest import FIXTURES, PASSWORD, may_create_projects


def render(text: str) -> str:
    """The HTML with the line breaks between tags and within text taken out, so assertions
    read what a browser shows rather than where markdown-it puts its newlines."""
    html = str(markdown.render(text, resolve=resolve))
    return re.sub(r">\n+<", "><", html).replace("\n", " ")


# --- The renderer (markdown-it-py, with our rules) ----------------------------------------------


def test_headings_paragraphs_lists_code_and_tables_render():
    html = render(
        "# Title\n\nA *first* paragraph\non two lines with `code` and **bold**.\n\n"
        "- one\n- two\n  continued\n\n1. first\n2. second\n\n"
        '```json\n{"a": 1} <b>\n```\n\n'
        "| field | meaning |\n|---|---|\n| `a\\|b` | the bar \\| stays |\n"
    )
    assert '<h1 id="title">Title</h1>' in html
    assert "<p>A <em>first</em> paragraph on two lines with <code>code</code> and " in html
    assert "<strong>bold</strong>" in html
    assert "<ul><li>one</li><li>two continued</li></ul>" in html
    assert "<ol><li>first</li><li>second</li></ol>" in html
    code = '<pre class="doc-code" data-language="json" tabindex="0"><code>{&quot;a&quot;: 1} '
    code += "&lt;b&gt;"
    assert code in html  # tabindex: a keyboard can scroll a wide block
    assert '<div class="table-wrap"><table class="table compact doc-table">' in html
    assert '<th scope="col">field</th>' in html
    assert "<td><code>a|b</code></td><td>the bar | stays</td>" in html


def test_headings_move_down_and_images_show_their_description():
    html = str(
        markdown.render(
            "# Top\n\n![a chart](https://example.com/x.png)", resolve=resolve, level_shift=1
        )
    )
    assert '<h2 id="top">Top</h2>' in html
    assert "<p>a chart</p>" in html


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "[click](data:text/html,<script>alert(1)</script>)",
        '<img src=x onerror="alert(1)">',
        "![x](https://example.com/x.png)",
        "| <script> | x |\n|---|---|\n| <iframe> | y |",
        "```\n</code></pre><script>alert(1)</script>\n```",
    ],
)
def test_nothing_a_file_holds_becomes_markup_of_its_own(source):
    html = render(source)
    assert "<script" not in html and "<img" not in html and "<iframe" not in html
    assert 'href="javascript' not in html and 'href="data' not in html


def test_links_go_to_the_docs_pages_the_web_or_nowhere():
    assert resolve("ragas.md") == "/docs/ragas/"
    assert resolve("bundle-format.md#claims") == "/docs/bundle-format/#claims"
    assert resolve("https://docs.ragas.io/") == "https://docs.ragas.io/"
    assert resolve("gold-export.schema.json") == "/docs/gold-export.schema.json"
    assert resolve("../config/settings.py") is None
    assert resolve("secret.md") is None
    html = render("See [the API](api.md) and [Ragas](https://docs.ragas.io/).")
    assert '<a href="/docs/api/">the API</a>' in html
    assert '<a href="https://docs.ragas.io/" rel="noopener noreferrer">Ragas</a>' in html


# --- The pages ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(DOCS))
def test_every_doc_is_a_page_for_signed_in_users(client, outsider, name):
    url = reverse("doc", kwargs={"name": name})
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    client.login(username=outsider.username, password=PASSWORD)
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "<h1" in html and "<table" in html  # every doc has a field table
    assert "```" not in html and "|---|" not in html  # rendered, not raw


@pytest.mark.django_db
def test_an_unknown_doc_or_file_is_404(client, outsider):
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get("/docs/settings/").status_code == 404
    assert client.get("/docs/..%2Fconfig%2Fsettings.py").status_code == 404
    assert client.get("/docs/small.jsonl").status_code == 404


@pytest.mark.django_db
def test_the_example_bundle_downloads_under_its_name_and_imports(client, outsider):
    client.login(username=outsider.username, password=PASSWORD)
    response = client.get(reverse("doc_file", kwargs={"filename": "example-bundle.jsonl"}))
    assert response.status_code == 200
    assert 'filename="example-bundle.jsonl"' in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    assert body == (FIXTURES / "small.jsonl").read_bytes()
    result = import_bundle(lines=io.BytesIO(body), project_slug="example")
    assert result.project.answers.count() == 4


@pytest.mark.django_db
def test_the_pages_that_take_or_give_files_link_to_their_format(client, team, lead):
    may_create_projects(lead)
    client.login(username=lead.username, password=PASSWORD)
    pages = {
        reverse("project_new"): ["/docs/bundle-format/", "/docs/example-bundle.jsonl"],
        reverse("project_upload", args=[team.slug]): [
            "/docs/bundle-format/",
            "/docs/example-bundle.jsonl",
        ],
        reverse("judges", args=[team.slug]): ["/docs/judge-runs/"],
        reverse("gold", args=[team.slug]): ["/docs/gold-export/"],
    }
    for url, links in pages.items():
        html = client.get(url).content.decode()
        for link in links:
            assert f'href="{link}"' in html, (url, link)
