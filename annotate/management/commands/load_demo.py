"""Load the demo project once: the course-notes bundle, a lead and three reviewers, labelling
opened, and the reviewers' demo labels (alice and bob on 40 answers, carol on 12 of them, so
agreement shows every label set and adjudication three columns), so every page has something
real to show.

Part of that work is done in the app, as a reviewer would, so the lead's Reviewers page has
figures to show: a few of alice's and bob's label sets are submitted through the labelling
services (timed tasks: seconds per claim, submissions per day) instead of imported, and carol
labels gold checks the queue serves her (accuracy against gold, the drift chart)."""

import copy
import json
import os
import random
from datetime import datetime, time, timedelta
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotate.checks.selectors import decided_answers
from annotate.checks.services import mark_checks, set_check_rate
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.labelling.services import (
    reopen_window,
    save_answer_label,
    save_claim_label,
    shown_passages,
    submit_labels,
)
from annotate.members.services import add_member, allow_adding_anyone
from annotate.models import Answer, Assignment, Project, Role, Support
from annotate.projects.opening import open_labelling
from annotate.projects.services import allow_creating_projects, update_guidelines
from annotate.queue.services import next_task

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
# Decided answers the demo marks as gold checks (the first by answer id), so the Gold page, the
# adjudication screen and the Reviewers page show some. 20 of the 24 decided answers: a few stay
# unmarked for the Gold page to offer. The check rate ends at 0: the demo's queue is as before.
DEMO_CHECKS = 20
# Seeds every choice the demo's work in the app makes (which label sets, the draws of the queue,
# which claim a slip falls on, how long a task took): the same demo on every load.
DEMO_SEED = 32
# Label sets of demo_labels.jsonl submitted in the app (timed) rather than imported: how many of
# each reviewer's, and the days before today they worked on them (as many tasks each day).
IN_APP = {"alice": (8, (3, 2)), "bob": (6, (2, 1))}
# carol's gold checks: how many she labels, and on which days before today. carol is the only
# reviewer a check can be served to: alice and bob labelled every decided answer (a check is
# never served to a reviewer who held its answer), carol 12 of them (21 decided ones left).
CAROL_CHECKS = 17
CAROL_DAYS = (2, 1)
# How carol does on her checks, in the order she labels them (by position): a slip now and then
# (one claim's support, a relevance off by one) and, from her 11th check on, every claim called
# insufficient evidence without reading the passages: the drift chart (which flags at most 5% of
# steady reviewers in 200 checks, so it takes a run of errors) raises its flag on her 17th,
# naming the checks from the 11th on.
CAROL_SLIPS = {3: "relevance", 6: "support"}
CAROL_CARELESS_FROM = 10
# Active seconds per claim of each reviewer's pace (a task is drawn around it), and the fixed
# seconds a task's whole-answer labels take.
PACE = {"alice": 38, "bob": 52, "carol": 27}
ANSWER_SECONDS = 20
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
    rng = random.Random(DEMO_SEED)
    pairs = read_lines("demo_labels.jsonl")
    in_app = pick_in_app(pairs, rng)
    # alice's and bob's work in the app before the imports, which count it among an answer's
    # holders (the overlap, the answer's `full` flag). Then the pairs, then the third reviewer:
    # label sets are ordered by submission, so carol is reviewer C wherever she labelled (the
    # label sets submitted in the app are dated days before the imports).
    worked = [label_in_app(project, line) for line in in_app]
    import_labels(lines=[line for line in pairs if line not in in_app], project=project)
    import_labels(lines=read_lines("demo_labels_third.jsonl"), project=project)
    decided = Answer.objects.filter(pk__in=decided_answers(project)).order_by("answer_id")
    checks = list(decided.values_list("answer_id", flat=True)[:DEMO_CHECKS])
    if checks:
        mark_checks(project=project, lead=lead, answer_ids=checks)
    worked += label_checks(project, pairs, rng)
    date_the_work(worked, rng)
    return update_guidelines(project=project, guidelines=GUIDELINES_V2, author=lead)


# --- The demo's work in the app ------------------------------------------------------------------


def read_lines(name: str) -> list[str]:
    with open(FIXTURES / name, encoding="utf-8") as stream:
        return [line for line in stream if line.strip()]


def pick_in_app(pairs: list[str], rng: random.Random) -> list[str]:
    """The lines of IN_APP's reviewers to submit in the app, drawn from each one's label sets,
    each reviewer's in the order they will be worked (the draw's)."""
    chosen = []
    for username, (count, _) in IN_APP.items():
        own = [line for line in pairs if json.loads(line)["reviewer"] == username]
        chosen += rng.sample(own, count)
    return chosen


def label_in_app(project: Project, line: str) -> Assignment:
    """A reviewer takes one answer of demo_labels.jsonl and labels it as the file says, through
    the labelling services (draft saves, submission). The task is created directly rather than
    drawn by next_task: the queue serves each reviewer the answers from a secret starting
    point of their own (annotate.queue.services.reviewer_offset), never a chosen one, and the
    demo must label the answer the line is about for its agreement and gold to stay as the
    files make them."""
    labels = json.loads(line)
    reviewer = project.memberships.get(user__username=labels["reviewer"]).user
    answer = project.answers.get(answer_id=labels["answer_id"])
    task = Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)
    return submit_in_app(task, labels)


def submit_in_app(task: Assignment, labels: dict) -> Assignment:
    """Save a task's labels (claims by index, as in the label file) and submit them, as the
    labelling screen does; the demo's labels are valid, so a refusal is a bug in the demo."""
    # The claims with their citations and the passages shown, read once for the task as the
    # labelling screen reads them, not again at each claim's save.
    claims = {c.ordinal: c for c in task.answer.claims.prefetch_related("citations")}
    shown = shown_passages(task.answer)
    for values in labels["claims"]:
        claim = claims[values["index"]]
        label, _ = save_claim_label(
            assignment=task,
            claim=claim,
            data={key: value for key, value in values.items() if key != "index"},
            citations=list(claim.citations.all()),
            shown=shown,
        )
        task = label.assignment  # as saved: the next save starts from it
    answer = {key: labels[key] for key in ("relevance", "abstention", "failure_labels", "note")}
    task, _ = save_answer_label(assignment=task, data=answer)
    errors = submit_labels(assignment=task)
    if errors:
        raise CommandError(f"The demo's labels of {labels['answer_id']} refused: {errors.fields}")
    return (
        Assignment.objects.select_related("reviewer")
        .annotate(claims=Count("answer__claims"))
        .get(pk=task.pk)
    )


def label_checks(project: Project, pairs: list[str], rng: random.Random) -> list[Assignment]:
    """carol labels CAROL_CHECKS gold checks, each served by the queue as it serves a check
    (next_task at a check rate of 1, with the demo's seeded draw), starting from the pair's
    labels of the answer (its gold: a check is a decided answer) and departing from them as
    CAROL_SLIPS and CAROL_CARELESS_FROM say. The check rate is back at 0 after."""
    carol = project.memberships.get(user__username="carol").user
    gold = {
        labels["answer_id"]: labels
        for labels in map(json.loads, pairs)
        if labels["reviewer"] == "alice"
    }
    project = set_check_rate(project=project, rate=1)
    done = []
    for number in range(CAROL_CHECKS):
        task = next_task(project=project, reviewer=carol, rng=rng)
        if task is None or not task.is_check:
            raise CommandError("The demo's queue served carol no gold check.")
        labels = copy.deepcopy(gold[task.answer.answer_id])  # a copy to depart from
        labels["reviewer"] = "carol"
        if number >= CAROL_CARELESS_FROM:
            for claim in labels["claims"]:
                miss(claim)
        elif CAROL_SLIPS.get(number) == "support":
            decided = [c for c in labels["claims"] if c["support"] != Support.INSUFFICIENT]
            if decided:
                miss(rng.choice(decided))
        elif CAROL_SLIPS.get(number) == "relevance":
            labels["relevance"] = 1 if labels["relevance"] != 1 else 2
        done.append(submit_in_app(task, labels))
    set_check_rate(project=project, rate=0)
    return done


def miss(claim: dict) -> None:
    """The claim called insufficient evidence (a harm then, where it was supported)."""
    if claim["support"] == Support.SUPPORTED:
        claim["severity"] = "minor"
    claim["support"] = Support.INSUFFICIENT


def date_the_work(tasks: list[Assignment], rng: random.Random) -> None:
    """Date the tasks done in the app on the days before today IN_APP and CAROL_DAYS give, each
    reviewer's in the order they were done, from 09:30 on, with active seconds around the
    reviewer's PACE per claim.

    The labelling services stamp a task with the moment each call is made and count its active
    time from the gaps between them: a demo loaded in a second would show a day's work done in
    that second, taking no time. No service takes a time, so the timestamps are set after."""
    days = {username: days for username, (_, days) in IN_APP.items()}
    days["carol"] = CAROL_DAYS
    today = timezone.localdate()
    by_reviewer: dict[str, list[Assignment]] = {}
    for task in tasks:
        by_reviewer.setdefault(task.reviewer.username, []).append(task)
    for username, own in by_reviewer.items():
        per_day = -(-len(own) // len(days[username]))
        for position, task in enumerate(own):
            if position % per_day == 0:
                day = today - timedelta(days=days[username][position // per_day])
                clock = timezone.make_aware(datetime.combine(day, time(9, 30)))
            spent = round(ANSWER_SECONDS + task.claims * PACE[username] * rng.uniform(0.6, 1.6))
            taken, submitted = clock, clock + timedelta(seconds=spent + rng.randint(5, 90))
            Assignment.objects.filter(pk=task.pk).update(
                taken_at=taken,
                touched_at=submitted,
                submitted_at=submitted,
                undo_until=submitted + reopen_window(),
                seconds_spent=spent,
            )
            clock = submitted + timedelta(seconds=rng.randint(20, 240))
