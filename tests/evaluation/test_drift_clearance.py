"""A lead clears a reviewer's drift flag (evaluation.clearances): the chart runs again from 0
after the check claims the lead had seen, the flag is up only for a later alarm, and the
Reviewers report, its page, its API and the command say who cleared it, when, after how many
claims and how many alarms came before. On the demo with real work in it
(tests/evaluation/reviewers_world.py): carol's run of wrong checks raises the flag."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.common import computed
from annotate.models import DriftClearance
from evaluation.clearances import NotAReviewer, NothingToClear, clear_drift
from evaluation.quality import cusum_design, drift
from evaluation.reports.reviewers import reviewers_report
from tests.api import build_demo, token_client
from tests.conftest import PASSWORD
from tests.evaluation import reviewers_world as world

# --- The pure chart: drift(errors, start=N) ----------------------------------------------------


def replay(errors: list[bool], start: int) -> tuple[int, list[tuple[int, ...]], int]:
    """The integer chart by hand from trial `start`: (statistic, the trials of each alarm,
    positions counted from the first trial; the alarms before `start` from trial 0)."""
    design = cusum_design(0.10, 1.0)

    def run(part, offset):
        statistic, since, alarms = 0, offset, []
        for i, error in enumerate(part, start=offset):
            statistic += design.error_step if error else design.correct_step
            statistic = max(statistic, 0)
            if statistic == 0:
                since = i + 1
            elif statistic >= design.threshold:
                alarms.append(tuple(range(since, i + 1)))
                statistic, since = 0, i + 1
        return statistic, alarms

    _, before = run(errors[:start], 0)
    statistic, after = run(errors[start:], start)
    return statistic, after, len(before)


def test_the_chart_from_a_clearance_is_the_chart_replayed_from_there():
    # 30 right, 10 wrong (an alarm), the lead clears after 45; 30 right, 12 wrong (another)
    errors = [False] * 30 + [True] * 10 + [False] * 35 + [True] * 12 + [False] * 3
    whole = drift(errors)
    assert whole.flag and whole.alarms == 2 and whole.start == 0 and whole.earlier_alarms == 0
    for start in (0, 20, 45, 76, 80, 90, len(errors)):
        statistic, alarms, earlier = replay(errors, start)
        chart = drift(errors, start=start)
        assert chart.start == start
        assert chart.flag is bool(alarms), start
        assert chart.alarms == len(alarms)
        assert chart.checks == (alarms[-1] if alarms else ())
        assert chart.earlier_alarms == earlier
        unit = chart.threshold / chart.design.threshold
        assert chart.statistic == pytest.approx(statistic * unit)
    # cleared after the first alarm: the second still raises the flag, named where it is
    after = drift(errors, start=45)
    assert after.flag and after.alarms == 1 and after.earlier_alarms == 1
    assert after.checks[0] >= 75 and after.checks[-1] < 87
    # cleared after both: nothing is up; the statistic is what the last three right left
    assert not drift(errors, start=87).flag
    assert drift(errors, start=87).earlier_alarms == 2
    # a clearance past the end (claims since lost) is the end: nothing after it yet
    past = drift(errors, start=500)
    assert (past.flag, past.alarms, past.start, past.earlier_alarms) == (False, 0, 90, 2)
    with pytest.raises(ValueError, match="starts at a trial"):
        drift(errors, start=-1)


# --- On the demo ---------------------------------------------------------------------------------


@pytest.fixture
def carol(db):
    return get_user_model().objects.create_user(username="carol", password=PASSWORD)


@pytest.fixture
def project(reviewer_a, reviewer_b, lead, carol):
    demo = build_demo([reviewer_a, reviewer_b], lead)
    return world.build(demo, alice=reviewer_a, carol=carol, lead=lead)


@pytest.fixture
def drifting(project, carol):
    """carol took every check, ten claims in a row wrong late on: flagged."""
    world.take_checks(project, carol, wrong=world.DRIFTING)
    return project


def rows(project) -> dict[str, dict]:
    return {row["username"]: row for row in reviewers_report(project, n_boot=20)["reviewers"]}


def page_url(project) -> str:
    return reverse("reviewers", kwargs={"slug": project.slug})


def clear_url(project, username: str) -> str:
    return reverse("reviewers_clear_drift", kwargs={"slug": project.slug, "username": username})


def api_path(project, username: str) -> str:
    return f"/api/v1/projects/{project.slug}/reviewers/{username}/clear-drift/"


@pytest.mark.django_db
def test_clearing_restarts_carols_chart_and_her_row_says_who_when_and_after_what(
    drifting, lead, carol
):
    before = rows(drifting)["carol"]["drift"]
    assert before["flag"] and before["cleared"] is None and before["start"] == 0
    revision = computed.revisions(drifting)[0]
    done = clear_drift(project=drifting, lead=lead, username="carol", trials=before["trials"])
    assert computed.revisions(drifting)[0] == revision + 1  # the stored report is stale
    assert done.earlier_alarms == before["alarms"] >= 1
    row = rows(drifting)["carol"]["drift"]
    assert row["flag"] is False and row["checks"] == [] and row["alarms"] == 0
    assert row["start"] == row["trials"] == before["trials"]
    assert row["earlier_alarms"] == before["alarms"]
    clearance = DriftClearance.objects.get()
    assert (clearance.reviewer, clearance.cleared_by, clearance.trials) == (
        carol,
        lead,
        before["trials"],
    )
    assert row["cleared"] == {
        "by": "lena",
        "at": clearance.cleared_at.isoformat(),
        "trials": before["trials"],
    }
    # nobody else's row changes shape: never cleared is null
    assert rows(drifting)["alice"]["drift"]["cleared"] is None


# The world's 25 checks hold 38 claims: the first 15 checks (23 claims) hold DRIFTING's run; two
# more all right; the rest (over 10 claims) all wrong.
FIRST_CHECKS, CALM_CHECKS = 15, 2


@pytest.mark.django_db
def test_a_new_run_of_errors_after_the_clearance_raises_the_flag_again(project, lead, carol):
    first = world.take_checks(project, carol, wrong=world.DRIFTING, limit=FIRST_CHECKS)
    seen = rows(project)["carol"]["drift"]
    assert seen["flag"], "the first checks raise the flag"
    clear_drift(project=project, lead=lead, username="carol", trials=seen["trials"])
    # back to form for a while: two checks all right raise nothing
    rest = world.take_checks(project, carol, wrong=set(), limit=CALM_CHECKS, day=6)
    calm = rows(project)["carol"]["drift"]
    assert not calm["flag"] and calm["trials"] > seen["trials"]
    late = world.take_checks(project, carol, wrong=set(range(0, 12)), day=7)
    assert late, "checks left to take"
    again = rows(project)["carol"]["drift"]
    assert again["flag"] is True and again["alarms"] == 1
    assert again["earlier_alarms"] == seen["alarms"]
    assert again["cleared"]["trials"] == seen["trials"] == again["start"]
    # the alarm names checks taken after the clearance, never the ones before it
    assert set(again["checks"]) <= set(late)
    assert not set(again["checks"]) & set(first + rest)
    # an alarm raised after the page the lead saw is not cleared by a post of that page
    with pytest.raises(NothingToClear, match="no drift flag up"):
        clear_drift(project=project, lead=lead, username="carol", trials=calm["trials"])
    clear_drift(project=project, lead=lead, username="carol")  # all of them now
    assert DriftClearance.objects.count() == 2  # both kept; the latest counts
    cleared = rows(project)["carol"]["drift"]
    assert not cleared["flag"] and cleared["earlier_alarms"] == seen["alarms"] + 1


@pytest.mark.django_db
def test_clearing_what_is_not_up_is_refused_and_changes_nothing(drifting, lead, carol):
    revision = computed.revisions(drifting)[0]
    with pytest.raises(NothingToClear, match="alice has no drift flag up") as refused:
        clear_drift(project=drifting, lead=lead, username="alice")
    assert refused.value.field == "username"
    with pytest.raises(NothingToClear, match="clear after 0 to") as refused:
        clear_drift(project=drifting, lead=lead, username="carol", trials=10_000)
    assert refused.value.field == "trials"
    with pytest.raises(NothingToClear, match="carol has no drift flag up"):
        clear_drift(project=drifting, lead=lead, username="carol", trials=5)  # before the run
    for name in ("lena", "oscar", "nobody"):  # the lead, an account without a role, no account
        with pytest.raises(NotAReviewer):
            clear_drift(project=drifting, lead=lead, username=name)
    assert computed.revisions(drifting)[0] == revision
    assert not DriftClearance.objects.exists()
    clear_drift(project=drifting, lead=lead, username="carol")
    with pytest.raises(NothingToClear, match="already cleared after"):
        clear_drift(project=drifting, lead=lead, username="carol")


def drift_cell(html: str, username: str) -> str:
    row = re.search(rf'<tr data-reviewer="{username}".*?</tr>', html, re.S).group(0)
    return re.search(r'<td data-cell="drift">(.*?)</td>', row, re.S).group(1)


@pytest.mark.django_db
def test_the_page_offers_the_button_on_the_flagged_row_only_and_then_says_who_cleared(
    drifting, client, lead, django_assert_num_queries
):
    client.login(username=lead.username, password=PASSWORD)
    html = client.get(page_url(drifting)).content.decode()
    trials = rows(drifting)["carol"]["drift"]["trials"]
    assert html.count("data-clear-drift=") == 1
    carol_cell = drift_cell(html, "carol")
    assert f'action="{clear_url(drifting, "carol")}"' in carol_cell
    assert f'name="trials" value="{trials}"' in carol_cell
    assert "csrfmiddlewaretoken" in carol_cell
    assert "data-clear-drift" not in drift_cell(html, "alice")
    response = client.post(clear_url(drifting, "carol"), {"trials": trials}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == page_url(drifting)
    assert f"Drift flag of carol cleared after {trials} check claims" in html
    assert "data-clear-drift=" not in html and "<strong>Drift: carol</strong>" not in html
    clearance = DriftClearance.objects.get()
    local = timezone.localtime(clearance.cleared_at)
    day = f"{local.day} {local:%b}"
    shown = " ".join(re.sub(r"<[^>]+>", " ", drift_cell(html, "carol")).split())
    assert f"cleared by lena, {day}, after {trials} claims; 1 earlier alarm" in shown
    assert shown.startswith("none over 0 claims since it was cleared")
    # the stored page still costs what it cost
    computed.clear()
    with django_assert_num_queries(5):
        assert client.get(page_url(drifting)).status_code == 200
    # a second post (a page drawn before the clearance) is refused with a message
    html = client.post(clear_url(drifting, "carol"), {"trials": trials}, follow=True)
    assert "Nothing cleared: carol&#x27;s drift flag was already cleared" in html.content.decode()
    assert DriftClearance.objects.count() == 1


@pytest.mark.django_db
def test_only_the_lead_clears_from_the_page_and_only_with_the_csrf_token(
    drifting, lead, reviewer_a, outsider
):
    url = clear_url(drifting, "carol")
    for person in (reviewer_a, outsider):
        client = Client()
        client.login(username=person.username, password=PASSWORD)
        assert client.post(url, {"trials": 1}).status_code == 404, person.username
    strict = Client(enforce_csrf_checks=True)
    strict.login(username=lead.username, password=PASSWORD)
    assert strict.post(url, {"trials": 1}).status_code == 403
    lead_client = Client()
    lead_client.login(username=lead.username, password=PASSWORD)
    assert lead_client.get(url).status_code == 405
    assert lead_client.post(clear_url(drifting, "nobody"), {"trials": 1}).status_code == 404
    response = lead_client.post(clear_url(drifting, "alice"), {"trials": 0}, follow=True)
    assert "Nothing cleared: alice has no drift flag up" in response.content.decode()
    assert not DriftClearance.objects.exists()


@pytest.mark.django_db
def test_the_api_clears_for_the_lead_and_refuses_with_field_paths(
    drifting, lead, reviewer_a, reviewer_b, outsider
):
    path = api_path(drifting, "carol")
    assert token_client(reviewer_a).post(path).status_code == 403
    assert token_client(reviewer_b).post(path).status_code == 403
    assert token_client(outsider).post(path).status_code == 404
    assert token_client(None).post(path).status_code in (401, 403)
    client = token_client(lead)
    assert client.post(api_path(drifting, "nobody")).status_code == 404
    assert client.post(api_path(drifting, "lena")).status_code == 404  # the lead: no reviewer
    refused = client.post(api_path(drifting, "alice"))
    assert refused.status_code == 400 and "no drift flag up" in refused.json()["username"][0]
    refused = client.post(path, {"trials": -1}, format="json")
    assert refused.status_code == 400 and "trials" in refused.json()
    refused = client.post(path, {"trials": 10_000}, format="json")
    assert refused.status_code == 400 and "clear after 0 to" in refused.json()["trials"][0]
    before = rows(drifting)["carol"]["drift"]
    response = client.post(path, {"trials": before["trials"]}, format="json")
    assert response.status_code == 200
    body = response.json()
    clearance = DriftClearance.objects.get()
    assert body["username"] == "carol" and body["cleared_by"] == "lena"
    assert body["trials"] == before["trials"] and body["earlier_alarms"] == before["alarms"]
    assert body["cleared_at"].startswith(clearance.cleared_at.date().isoformat())
    report = client.get(f"/api/v1/projects/{drifting.slug}/reviewers/").json()
    carol_row = next(row for row in report["reviewers"] if row["username"] == "carol")
    assert carol_row["drift"]["flag"] is False
    assert carol_row["drift"]["cleared"]["by"] == "lena"
    again = client.post(path)
    assert again.status_code == 400 and "already cleared" in again.json()["username"][0]


@pytest.mark.django_db
def test_the_command_prints_the_clearance(drifting, lead):
    clear_drift(project=drifting, lead=lead, username="carol")
    out = StringIO()
    call_command("reviewers", "--project", drifting.slug, "--json", stdout=out)
    carol_row = next(r for r in json.loads(out.getvalue())["reviewers"] if r["username"] == "carol")
    assert carol_row["drift"]["cleared"]["by"] == "lena" and not carol_row["drift"]["flag"]
    out = StringIO()
    call_command("reviewers", "--project", drifting.slug, stdout=out)
    assert "(cleared by lena " in out.getvalue() and "1 earlier alarm)" in out.getvalue()
