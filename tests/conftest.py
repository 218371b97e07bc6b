"""Named people and sample data shared by the whole suite.

reviewer_a and reviewer_b review the project, lead leads it, outsider has an account but no
role in it. Every view and endpoint is tested with all four (and anonymous)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotate.models import Project, Role

# Real worker processes for the tests of background jobs (fixtures `workers`, `database_tasks`);
# a real OpenID Connect provider for single sign-on (fixtures `oidc_provider`, `sso`).
pytest_plugins = ["tests.workers", "tests.oidc_provider"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PASSWORD = "correct horse battery"

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# around it are synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Logins dominate the access-matrix tests with the production hasher; tests need no
    password security."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


IMMEDIATE_TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture(autouse=True)
def _tasks_run_in_process(settings, tmp_path):
    """Background jobs run inside the request or call that queues them, as with
    CLAIMDESK_TASKS=immediate, and store their files in the test's own folder. Tests of the
    workers themselves (tests/jobs/) switch to the database or RQ backend."""
    settings.TASKS = IMMEDIATE_TASKS
    settings.CLAIMDESK_TASKS = "immediate"
    settings.STORAGES = {
        **settings.STORAGES,
        "jobs": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "jobs"},
        },
    }


@pytest.fixture(autouse=True)
def _no_login_throttle(settings):
    """django-axes needs the request to count a login, which client.login() does not pass;
    tests/test_login_throttle.py switches it back on and logs in through the pages."""
    settings.AXES_ENABLED = False


def import_fixture(name: str, slug: str, **kwargs) -> Project:
    from annotate.imports.bundle_import import import_bundle

    with open(FIXTURES / name, "rb") as stream:
        return import_bundle(lines=stream, project_slug=slug, **kwargs).project


def project_calls(monkeypatch, module, name: str) -> list[str]:
    """Replace ``module.name``, a function of a project, by one that records the project's
    slug on each call and then does the same: the list it returns fills as it is called."""
    calls: list[str] = []
    real = getattr(module, name)

    def counted(project, *args, **kwargs):
        calls.append(project.slug)
        return real(project, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def labelled_demo(*, reviewers=("alice", "bob"), leads=(), slug: str = "demo", **member) -> Project:
    """The demo bundle with its two reviewers' label sets (demo_labels.jsonl) imported:
    reviewers (usernames) added first, then leads, labelling opened, labels imported.
    ``member`` goes to each reviewer's add_member (a password, say)."""
    from annotate.imports.label_import import import_labels
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling

    project = import_fixture("demo.jsonl", slug)
    for name in reviewers:
        add_member(project=project, username=name, role=Role.REVIEWER, **member)
    for name in leads:
        add_member(project=project, username=name, role=Role.LEAD)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    return project


def decide_support(project: Project, lead, pair=None):
    """A lead decides `support` of a claim pair (by default the first pending one) as
    supported, as the adjudication screen would; returns the pair."""
    from annotate.adjudication.services import DecisionInput, adjudicate
    from annotate.gold.pairs import PENDING, pairs_for_project
    from annotate.models import Answer

    if pair is None:
        _, claim_pairs = pairs_for_project(project)
        pair = next(p for p in claim_pairs if p.source["support"] == PENDING)
    answer = Answer.objects.get(pk=pair.answer_id)
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        decisions=[DecisionInput(answer.claims.get(pk=pair.claim_id), "support", "supported")],
        rationale="decided",
    )
    return pair


@pytest.fixture
def derived_shares(monkeypatch) -> list[set[int]]:
    """The answers each call of answer_shares derived (their pair summary's shares),
    call by call."""
    from annotate.gold import selectors, summary

    calls: list[set[int]] = []
    real = summary.answer_shares

    def counted(project, label_sets):
        calls.append(set(label_sets))
        return real(project, label_sets)

    # Where a kept summary derives shares, and where an uncached one does.
    monkeypatch.setattr(selectors, "answer_shares", counted)
    monkeypatch.setattr(summary, "answer_shares", counted)
    return calls


@pytest.fixture
def small_project(db) -> Project:
    return import_fixture("small.jsonl", "small")


def _person(username: str):
    return get_user_model().objects.create_user(username=username, password=PASSWORD)


@pytest.fixture
def reviewer_a(db):
    return _person("alice")


@pytest.fixture
def reviewer_b(db):
    return _person("bob")


@pytest.fixture
def lead(db):
    return _person("lena")


@pytest.fixture
def outsider(db):
    return _person("oscar")


@pytest.fixture
def team(small_project, reviewer_a, reviewer_b, lead, outsider):
    """The small project with its people: two reviewers and a lead; the outsider has no role."""
    from annotate.members.services import add_member

    add_member(project=small_project, username=reviewer_a.username, role=Role.REVIEWER)
    add_member(project=small_project, username=reviewer_b.username, role=Role.REVIEWER)
    add_member(project=small_project, username=lead.username, role=Role.LEAD)
    return small_project


def pytest_report_header(config):
    from django.db import connection

    return f"claimdesk database: {connection.vendor}"


CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
_LOUD: set[str] = set()


def pytest_terminal_summary(terminalreporter):
    for message in sorted(_LOUD):
        terminalreporter.write_line(f"!!!!!!!!!! {message} !!!!!!!!!!", red=True, bold=True)


def pytest_collection_modifyitems(config, items):
    from django.db import connection

    on_postgres = connection.vendor == "postgresql"
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(
                pytest.mark.skip(reason="needs PostgreSQL (runs in the PostgreSQL leg)")
            )


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright. Required when CI=true; elsewhere a missing
    browser skips these tests with a loud line."""
    if not os.path.exists(CHROMIUM):
        message = f"BROWSER TESTS SKIPPED: {CHROMIUM} is missing (apt-get install chromium)"
        if CI:
            pytest.fail(f"CI=true but {CHROMIUM} is missing: the browser leg is required")
        _LOUD.add(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def login(page, user) -> None:
    page.goto("/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def shared_queue_start(monkeypatch):
    """Every reviewer walks the queue from the same point (its start), as if offsets were all
    0: for tests that need to know which answer the next reviewer gets. The product gives each
    reviewer a secret starting point of their own (annotate.queue.services.reviewer_offset)."""
    from annotate.queue import services as queue

    monkeypatch.setattr(queue, "reviewer_offset", lambda project, reviewer: 0.0)


def may_create_projects(*users):
    """Give people the permission to create projects (staff and such users may; others get
    403): for tests that create projects through the page or the API."""
    from annotate.projects.services import allow_creating_projects

    for user in users:
        allow_creating_projects(user=user)


@pytest.fixture(autouse=True)
def _fresh_report_cache():
    """Reports are kept per process by revision and stored ones decoded once
    (annotate.common.computed); each test starts with none kept, so no test reads another's."""
    from annotate.common import computed

    computed.clear()
    computed.forget_decoded()
    yield
    computed.clear()
    computed.forget_decoded()


def gold_for_every_answer(project: Project, *, note: str = "") -> list[bytes]:
    """Lines of gold from elsewhere (import_gold) for every answer of the project, valid under
    any label schema: every claim unsupported (insufficient evidence where the scale has it,
    so no evidence is needed) and minor, each citation that resolves judged not to support it,
    relevance 1, abstention appropriate where the answer declined; `note` everywhere."""
    import json

    schema = project.schema
    lines = []
    for answer in project.answers.order_by("answer_id").prefetch_related("claims__citations"):
        line: dict = {"answer_id": answer.answer_id, "note": note, "claims": []}
        if schema.answer("relevance"):
            line["relevance"] = 1
        if schema.answer("abstention") and answer.abstained:
            line["abstention"] = "appropriate"
        for claim in answer.claims.all():
            item = {
                "index": claim.ordinal,
                "support": "unsupported" if schema.binary else "insufficient_evidence",
                "note": note,
            }
            if schema.claim("severity"):
                item["severity"] = "minor"
            if schema.claim("citations"):
                item["citations"] = {
                    c.cited_id: "does_not_support"
                    for c in claim.citations.all()
                    if c.passage_id is not None
                }
            line["claims"].append(item)
        lines.append(json.dumps(line).encode() + b"\n")
    return lines


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Django's cache holds the wrong-token counts (annotate.members.tokens): each test starts with
    none, so that one test's 401s never pause another's requests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
