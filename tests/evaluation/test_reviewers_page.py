"""The lead's Reviewers page, its CSV and its API endpoint: every number the page shows read
back from the page rendered on the demo with real work in it (timed tasks, decisions, gold
checks with a drift alarm), the sort (a plain link and its htmx partial), the query count,
and who reaches it."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotate.common import computed
from annotate.tasks import refresh_report
from evaluation.reports.reviewers import reviewers_report
from tests.api import build_demo, token_client
from tests.conftest import PASSWORD
from tests.evaluation import reviewers_world as world

pytestmark = pytest.mark.django_db


@pytest.fixture
def carol(db):
    return get_user_model().objects.create_user(username="carol", password=PASSWORD)


@pytest.fixture
def project(reviewer_a, reviewer_b, lead, carol):
    demo = build_demo([reviewer_a, reviewer_b], lead)
    world.build(demo, alice=reviewer_a, carol=carol, lead=lead)
    world.take_checks(demo, carol, wrong=world.DRIFTING)
    return demo


@pytest.fixture
def as_lead(client, lead):
    client.login(username=lead.username, password=PASSWORD)
    return client


def url(project, **query) -> str:
    base = reverse("reviewers", kwargs={"slug": project.slug})
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


# Elements without an end tag (<br>, a form's <input>).
VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"})


class Cells(HTMLParser):
    """Each reviewer row's cells (data-cell) as text, in the order the rows come."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[str, dict[str, str]]] = []
        self.drift: list[str] = []
        self._cell: list[str] = []  # the open cells' names, innermost last
        self._depth: list[int] = []
        self._level = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "data-reviewer" in attrs:
            self.rows.append((attrs["data-reviewer"], {}))
        if "data-drift" in attrs:
            self.drift.append(attrs["data-drift"])
        if tag in VOID:  # no end tag follows: it opens nothing
            return
        self._level += 1
        if "data-cell" in attrs and self.rows:
            self._cell.append(attrs["data-cell"])
            self._depth.append(self._level)
            self.rows[-1][1].setdefault(attrs["data-cell"], "")

    def handle_endtag(self, tag):
        if self._depth and self._depth[-1] == self._level:
            self._depth.pop()
            self._cell.pop()
        self._level -= 1

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_data(self, data):
        for name in self._cell:
            self.rows[-1][1][name] += data


def cells(html: str) -> Cells:
    parser = Cells()
    parser.feed(html)
    return parser


def squash(text: str) -> str:
    return " ".join(text.split())


def test_every_number_on_the_page_is_the_reports(project, as_lead):
    response = as_lead.get(url(project))
    assert response.status_code == 200
    html = response.content.decode()
    report = {row["username"]: row for row in reviewers_report(project)["reviewers"]}
    page = dict(cells(html).rows)
    assert set(page) == {"alice", "bob", "carol"}
    for name, row in report.items():
        shown = {key: squash(value) for key, value in page[name].items()}
        assert shown["tasks"].startswith(f"{row['tasks']} ")
        assert shown["timed"] == f"{row['timed_tasks']} timed"
        spent = row["seconds_per_claim"]
        if spent["median"] is None:
            assert shown["median"].startswith("— undefined: no task submitted in the app")
            assert shown["per_day"].startswith("— undefined:")
        else:
            assert shown["median"] == f"{floatformat(spent['median'], 1)} s n={spent['n']}"
            assert shown["p90"] == f"{floatformat(spent['p90'], 1)} s n={spent['n']}"
            days = row["days_worked"]
            assert shown["per_day"] == (
                f"{floatformat(row['per_day'], 2)} {row['timed_tasks']} in {days} day"
                + ("s" if days != 1 else "")
            )
        if row["overruled_share"] is None:
            assert "undefined: no field of theirs was decided" in shown["overruled"]
        else:
            assert shown["overruled"] == (
                f"{round(row['overruled_share'] * 100)}% "
                f"{row['overruled']}/{row['adjudicated_fields']}"
            )
        assert shown["checks"] == str(row["checks"]["n"])
        support = row["checks"]["accuracy"]["support"]
        if support["value"] is None:
            assert "undefined" in shown["accuracy"]
        else:
            low, high = support["ci95"]
            assert shown["accuracy"].startswith(
                f"{round(support['value'] * 100)}% {support['correct']}/{support['n']} "
                f"[{round(low * 100)}–{round(high * 100)}%] κ vs gold"
            )
        for other, fields in row["kappa_with"].items():
            entry = fields["support"]
            assert (
                f"{other}: {floatformat(entry['kappa'], 2)} n={entry['n']}" in shown["kappa-with"]
            )
    # carol's drift: marked on her row, and the checks that raised it named there
    assert cells(html).drift == ["carol"]
    carol = report["carol"]
    assert carol["drift"]["flag"]
    named = ", ".join(str(check) for check in carol["drift"]["checks"])
    assert squash(page["carol"]["drift-checks"]) == named
    assert "<strong>Drift: carol</strong>" in html
    # the matrix: each pair's kappa and n
    alice_carol = carol["kappa_with"]["alice"]["support"]
    assert f'data-pair="carol|alice">{floatformat(alice_carol["kappa"], 2)}' in html


def test_the_table_sorts_on_the_server_by_a_link_and_by_its_htmx_partial(project, as_lead):
    report = reviewers_report(project)["reviewers"]
    by_tasks = [r["username"] for r in sorted(report, key=lambda r: -r["tasks"])]
    page = as_lead.get(url(project, sort="-tasks")).content.decode()
    assert [name for name, _ in cells(page).rows] == by_tasks
    assert '<a href="?sort=tasks&amp;field=support"' in page  # the current column turns round
    # an undefined figure sorts last whichever way
    timed = sorted((r for r in report if r["per_day"] is not None), key=lambda r: r["per_day"])
    for order, expected in (("per_day", timed), ("-per_day", timed[::-1])):
        page = as_lead.get(url(project, sort=order)).content.decode()
        assert [name for name, _ in cells(page).rows] == [r["username"] for r in expected] + ["bob"]
    partial = as_lead.get(url(project, sort="-tasks"), HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    assert body.lstrip().startswith('<div class="card flush" id="reviewers-table">')
    assert "<html" not in body
    assert [name for name, _ in cells(body).rows] == by_tasks
    # an unknown column is the default order, not an error
    page = as_lead.get(url(project, sort="drop table")).content.decode()
    assert [name for name, _ in cells(page).rows] == ["alice", "bob", "carol"]


def test_a_stored_page_costs_a_fixed_number_of_queries(project, as_lead, django_assert_num_queries):
    as_lead.get(url(project))  # computed once and stored for this revision
    computed.clear()
    with django_assert_num_queries(5):
        response = as_lead.get(url(project))
    assert b'data-report-freshness="current"' in response.content
    with django_assert_num_queries(5):
        as_lead.get(url(project, sort="-median", field="severity"))


def test_the_csv_is_the_table(project, as_lead):
    report = {row["username"]: row for row in reviewers_report(project)["reviewers"]}
    response = as_lead.get(url(project, format="csv", sort="-tasks"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["username"] for r in rows] == [
        r["username"] for r in sorted(report.values(), key=lambda r: -r["tasks"])
    ]
    for line in rows:
        row = report[line["username"]]
        assert int(line["tasks"]) == row["tasks"]
        assert int(line["checks"]) == row["checks"]["n"]
        median = row["seconds_per_claim"]["median"]
        assert line["seconds_per_claim_median"] == ("" if median is None else str(median))
        assert line["drift_flag"] == ("true" if row["drift"]["flag"] else "false")
        assert line["drift_checks"] == " ".join(map(str, row["drift"]["checks"]))
        support = row["checks"]["accuracy"]["support"]
        assert line["accuracy_support_n"] == str(support["n"])
        for other, fields in row["kappa_with"].items():
            assert float(line[f"kappa_support_with_{other}"]) == pytest.approx(
                fields["support"]["kappa"]
            )
            assert int(line[f"n_support_with_{other}"]) == fields["support"]["n"]
    # an undefined figure is an empty cell, its reason in the last column
    bob = next(line for line in rows if line["username"] == "bob")
    assert bob["seconds_per_claim_median"] == bob["per_day"] == ""
    assert "imported label sets carry no time" in bob["undefined"]


def test_the_api_answers_the_stored_report_to_the_lead_only(
    project, lead, reviewer_a, reviewer_b, outsider
):
    path = f"/api/v1/projects/{project.slug}/reviewers/"
    response = token_client(lead).get(path)
    assert response.status_code == 200
    assert response.json() == reviewers_report(project)
    assert response["Report-Current"] == "true"
    assert token_client(reviewer_a).get(path).status_code == 403
    assert token_client(reviewer_b).get(path).status_code == 403
    assert token_client(outsider).get(path).status_code == 404
    assert token_client(None).get(path).status_code in (401, 403)


def test_only_the_lead_reaches_the_page(client, project, lead, reviewer_a, reviewer_b, outsider):
    for person, status in ((reviewer_a, 404), (reviewer_b, 404), (outsider, 404), (lead, 200)):
        client.logout()
        client.login(username=person.username, password=PASSWORD)
        assert client.get(url(project)).status_code == status, person.username
        assert client.get(url(project, format="csv")).status_code == status, person.username
    client.logout()
    assert client.get(url(project)).status_code == 302  # to the login page


def test_the_lead_s_tabs_lead_to_the_page(project, as_lead):
    page = as_lead.get(reverse("agreement", kwargs={"slug": project.slug})).content.decode()
    assert f'href="{url(project)}"' in page
    mine = as_lead.get(url(project)).content.decode()
    assert f'href="{url(project)}" aria-current="page">Reviewers</a>' in mine


def test_a_large_projects_first_table_is_computed_by_a_worker_while_the_page_waits(
    project, as_lead, lead, database_tasks, settings
):
    settings.CLAIMDESK_REPORT_INLINE_MAX_ROWS = 10
    page = as_lead.get(url(project)).content.decode()
    assert 'data-report-freshness="pending"' in page and 'id="reviewers-table"' not in page
    assert 'role="status" aria-live="polite"' in page
    api = token_client(lead).get(f"/api/v1/projects/{project.slug}/reviewers/")
    assert api.status_code == 202 and api["Retry-After"]
    (task,) = DBTaskResult.objects.all()
    refresh_report.call(*task.args_kwargs["args"])
    page = as_lead.get(url(project)).content.decode()
    assert 'data-report-freshness="current"' in page and 'id="reviewers-table"' in page
    assert token_client(lead).get(f"/api/v1/projects/{project.slug}/reviewers/").status_code == 200


def test_the_api_costs_a_fixed_number_of_queries(project, lead, django_assert_num_queries):
    client = token_client(lead)
    path = f"/api/v1/projects/{project.slug}/reviewers/"
    assert client.get(path).status_code == 200  # computed once and stored
    computed.clear()
    with django_assert_num_queries(5):
        assert client.get(path).status_code == 200


def test_the_demo_as_make_run_loads_it_fills_the_page(client):
    """`make run` loads the demo: its lead finds on this page carol's accuracy on the gold
    checks she labelled (n and Wilson interval), the drift flag her last checks raised, and
    time per claim and per day for everyone who worked in the app (alice, bob and carol on two
    days each); the figures are the demo's seeded work, the same on every load."""
    from django.core.management import call_command

    from annotate.management.commands.load_demo import PASSWORD as DEMO_PASSWORD
    from annotate.models import Assignment

    call_command("load_demo", stdout=io.StringIO())
    client.login(username="lead", password=DEMO_PASSWORD)
    response = client.get("/p/demo/reviewers/")
    assert response.status_code == 200
    html = response.content.decode()
    page = {name: {k: squash(v) for k, v in row.items()} for name, row in cells(html).rows}
    assert list(page) == ["alice", "bob", "carol"]
    shown = {
        name: {key: row[key] for key in ("tasks", "median", "p90", "per_day", "checks")}
        for name, row in page.items()
    }
    assert shown == {
        "alice": {
            "tasks": "40 8 timed",
            "median": "52.3 s n=8",
            "p90": "71.6 s n=8",
            "per_day": "4.00 8 in 2 days",
            "checks": "0",
        },
        "bob": {
            "tasks": "40 6 timed",
            "median": "67.3 s n=6",
            "p90": "78.5 s n=6",
            "per_day": "3.00 6 in 2 days",
            "checks": "0",
        },
        "carol": {
            "tasks": "29 17 timed",
            "median": "42.0 s n=17",
            "p90": "59.0 s n=17",
            "per_day": "8.50 17 in 2 days",
            "checks": "17",
        },
    }
    # carol's support on the checks: 16 of 24 claims as gold, the 95% Wilson interval, and
    # kappa against gold with its bootstrap interval
    assert page["carol"]["accuracy"].startswith("67% 16/24 [47–82%] κ vs gold 0.36 [0.14, 0.65]")
    # alice and bob labelled every decided answer: no check can be served to them
    for name in ("alice", "bob"):
        assert page[name]["accuracy"].startswith("— undefined: no check labelled on this field")
    assert page["alice"]["drift"] == page["bob"]["drift"] == "— undefined: no checks"
    # carol's last session (every claim "insufficient evidence" from her 11th check) raised the
    # flag on her 17th and last: the cell names the checks from the 11th on, by task number, in
    # the order she submitted them
    assert cells(html).drift == ["carol"]
    numbers = list(
        Assignment.objects.filter(is_check=True, reviewer__username="carol")
        .order_by("submitted_at", "pk")
        .values_list("answer__task_number", flat=True)
    )
    raised = page["carol"]["drift"]
    assert raised.startswith("raised by checks ")
    assert page["carol"]["drift-checks"] == ", ".join(map(str, numbers[10:17]))


def test_the_drift_note_states_the_chart_s_exact_design(project, as_lead):
    """The note under the table gives the design the report ran: its false-flag rate in 200
    checks, its run length and its detection at the project's claims per check."""
    design = reviewers_report(project)["drift_design"]
    text = squash(re.sub(r"<[^>]+>", " ", as_lead.get(url(project)).content.decode()))
    assert f"within 200 checks in {100 * design['false_flag_rate']:.1f}% of cases" in text
    assert f"about one false alarm in {design['in_control_run_length']:,.0f} checks" in text
    assert f"within 40 checks with probability {100 * design['detection']:.1f}%" in text
    assert f"at this project's {design['claims_per_check']:.1f} claims per check" in text
