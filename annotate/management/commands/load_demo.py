"""Load the demo project once: the course-notes bundle, a lead and three reviewers, labelling
opened, and the reviewers' demo labels (alice and bob on 40 answers, carol on 12 of them, so
agreement shows every label set and adjudication three columns), so every page has something
real to show."""

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotate.checks.selectors import decided_answers
from annotate.checks.services import mark_checks
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.members.services import add_member, allow_adding_anyone
from annotate.models import Answer, Project, Role
from annotate.projects.opening import open_labelling
from annotate.projects.services import allow_creating_projects, update_guidelines

FIXTURES = Path(settings.BASE_DIR) / "fixtures"
SLUG = "demo"
PEOPLE = [
    ("lead", Role.LEAD),
    ("alice", Role.REVIEWER),
    ("bob", Role.REVIEWER),
    ("carol", Role.REVIEWER),
]
PASSWORD = "claimdesk-demo"
DEMO_OVERLAP = 3
# Decided answers the demo marks as gold checks (the first by answer id), so the Gold page and
# the adjudication screen show some. The check rate stays 0: the demo's queue is as before.
DEMO_CHECKS = 4
DEMO_LEAD = "lead"  # may create projects and add anyone to them, as well as lead the demo
GUIDELINES = """\
Label what the supplied passages permit, not what you know.

Support, per claim
- supported: a passage shown here states it (quote the words that decide it).
- contradicted: a passage shown here says otherwise (quote it).
- insufficient evidence: nothing shown decides it. Not found is not false.

Severity: how much the claim could harm a student relying on it (none for supported claims).
Needs evidence: untick for hedges, pleasantries and "the notes do not say" statements.
Citations: judge each cited passage against its own claim only; a valid id is not support.
Relevance (whole answer): 0 off-topic, 1 covers part of the question, 2 covers every part.
Scored apart from correctness.
Abstention: appropriate when the passages shown cannot support an answer; unnecessary when
they can, whatever the notes might contain elsewhere.
"""
# The rule the lead adds once the two reviewers' labels are in: the demo's guidelines are at v2,
# its labels and gold at v1, so the re-audit page and agreement per version have data.
GUIDELINES_V2 = (
    GUIDELINES
    + """
Dates and deadlines: supported only when the passage gives the same day; a week or a month
that contains it is insufficient evidence.
"""
)


class Command(BaseCommand):
    help = "Import the demo project with demo users (does nothing if it exists)."

    def handle(self, *args, **options):
        project = Project.objects.filter(slug=SLUG).first()
        if project is None:
            try:
                project = load()
            except BundleInvalid as exc:
                raise CommandError("\n".join(map(str, exc.errors))) from exc
            self.stdout.write(f"Demo project '{project.name}' loaded.")
        else:
            self.stdout.write(f"Demo project '{project.name}' is already loaded.")
        # The demo lead creates projects and staffs them too (also when the demo was loaded
        # before that).
        lead = project.memberships.filter(user__username=DEMO_LEAD).select_related("user").first()
        if lead is not None:
            allow_creating_projects(user=lead.user)
            allow_adding_anyone(user=lead.user)
        self.stdout.write(f"Log in at {demo_url()} with (password: {PASSWORD}):")
        for username, role in PEOPLE:
            extra = " (may create projects and add anyone)" if username == DEMO_LEAD else ""
            self.stdout.write(f"  {username:<6} {role}{extra}")


def demo_url() -> str:
    """Where `make run` serves: bin/run-dev passes ADDRESS (default 127.0.0.1:8000) to
    runserver, which takes a port, host:port or [ipv6]:port; a server on every interface
    (0.0.0.0, ::) is reached on this machine at 127.0.0.1."""
    address = os.environ.get("ADDRESS", "").strip() or "127.0.0.1:8000"
    host, _, port = address.rpartition(":")
    if not host and not port.isdigit():  # a host alone: runserver's default port
        host, port = port, "8000"
    if host in ("", "0.0.0.0", "0", "[::]"):
        host = "127.0.0.1"
    return f"http://{host}:{port}/"


@transaction.atomic
def load() -> Project:
    with open(FIXTURES / "demo.jsonl", "rb") as stream:
        project = import_bundle(lines=stream, project_slug=SLUG).project
    for username, role in PEOPLE:
        # The demo logins are the point of the demo: an existing "alice" gets the demo password.
        add_member(
            project=project,
            username=username,
            role=role,
            password=PASSWORD,
            reset_password=True,
        )
    lead = project.memberships.get(user__username=DEMO_LEAD).user
    allow_creating_projects(user=lead)
    allow_adding_anyone(user=lead)
    # Three reviewers may label each answer (set while the project is a draft, as the set-up
    # page does): carol is the third on part of them.
    project = update_guidelines(
        project=project, guidelines=GUIDELINES, overlap=DEMO_OVERLAP, author=lead
    )
    project = open_labelling(project=project)
    # The pairs first, then the third reviewer: label sets are ordered by submission, so carol
    # is reviewer C wherever she labelled.
    for name in ("demo_labels.jsonl", "demo_labels_third.jsonl"):
        with open(FIXTURES / name, "rb") as stream:
            import_labels(lines=stream, project=project)
    decided = Answer.objects.filter(pk__in=decided_answers(project)).order_by("answer_id")
    checks = list(decided.values_list("answer_id", flat=True)[:DEMO_CHECKS])
    if checks:
        mark_checks(project=project, lead=lead, answer_ids=checks)
    return update_guidelines(project=project, guidelines=GUIDELINES_V2, author=lead)
