"""Gold releases (issue #36): a release freezes the gold set under a name; a label changed
afterwards changes a later release, never the first, which downloads again byte for byte;
diff_gold lists exactly what changed; the card's counts and kappas are the agreement report's
and the gold page's; names are checked; reviewers reach no release anywhere."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotate.gold.exports import gold_counts, gold_rows
from annotate.gold.pairs import PENDING, pairs_for_project
from annotate.models import GoldRelease
from annotate.releases import selectors
from annotate.releases.diff import diff_releases
from annotate.releases.services import ReleaseNameTaken, ReleaseRefused, create_release
from evaluation.reports.agreement import agreement_report
from tests.api import API, token_client
from tests.conftest import PASSWORD, decide_support, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(lead):
    return labelled_demo(leads=(lead.username,), password=PASSWORD)


def release_bytes(release: GoldRelease) -> bytes:
    return b"".join(selectors.jsonl_chunks(release))


def a_pair_pending_on_support_alone(project):
    """A claim pair whose only pending field is `support` (support_binary agreed: both said
    unsupported, one contradicted, the other insufficient evidence), so deciding it settles
    the claim's row."""
    _, claim_pairs = pairs_for_project(project)
    return next(
        p
        for p in claim_pairs
        if [f for f, s in p.source.items() if s == PENDING] == ["support"]
        and p.source["support_binary"] != PENDING
    )


def test_a_release_never_changes_and_diff_gold_lists_exactly_the_change(demo, lead, tmp_path):
    v1 = create_release(project=demo, name="v1", user=lead)
    frozen = release_bytes(v1)
    assert hashlib.sha256(frozen).hexdigest() == v1.sha256 and len(frozen) == v1.size
    # The release is the gold export as it was: the same rows, the same bytes.
    assert frozen == "".join(row.line + "\n" for row in gold_rows(demo)).encode()
    assert v1.row_count == frozen.count(b"\n") == 101

    pair = a_pair_pending_on_support_alone(demo)
    decide_support(demo, lead, pair)
    v2 = create_release(project=demo, name="v2", user=lead)

    # v1 downloads byte for byte as before, from the page and the API, though gold changed.
    browser = Client()
    browser.force_login(lead)
    page = browser.get(reverse("release_download", args=["demo", "v1", "jsonl"]))
    assert page.status_code == 200 and b"".join(page.streaming_content) == frozen
    api = token_client(lead).get(f"{API}/projects/demo/releases/v1/gold.jsonl")
    assert api.status_code == 200 and b"".join(api.streaming_content) == frozen
    assert release_bytes(v2) != frozen

    diff = diff_releases(v1, v2)
    claim = demo.answers.get(pk=pair.answer_id).claims.get(pk=pair.claim_id)
    answer_id = demo.answers.get(pk=pair.answer_id).answer_id
    assert diff.added == [] and diff.removed == []
    # The lead decided the claim supported where both reviewers said unsupported: its row
    # changes, and so does its answer's row, whose support_binary is its claims'.
    assert [c.key for c in diff.changed] == [
        ("claim", answer_id, claim.ordinal),
        ("answer", answer_id, None),
    ]
    assert diff.changed[0].fields == {
        "decided": (False, True),
        "gold.support": (None, "supported"),
        "gold.support_binary": ("unsupported", "supported"),
        "gold_source.support": ("pending", "adjudicated"),
        "gold_source.support_binary": ("agreed", "adjudicated"),
        "label": (0, 1),
        "rationale.support": (None, "decided"),
        "rationale.support_binary": (None, "decided"),
    }
    assert diff.changed[1].fields == {
        "gold.support_binary": ("unsupported", "supported"),
        "gold_source.support_binary": ("agreed", "adjudicated"),
    }
    assert diff.by_field["gold.support_binary"] == 2 and diff.by_field["decided"] == 1

    out = io.StringIO()
    call_command("diff_gold", "--project", "demo", "v1", "v2", "--json", stdout=out)
    assert json.loads(out.getvalue()) == diff.as_dict()
    assert json.loads(out.getvalue())["counts"] == {"added": 0, "removed": 0, "changed": 2}
    text = io.StringIO()
    call_command("diff_gold", "--project", "demo", "v1", "v2", stdout=text)
    assert f"~ claim {answer_id} claim {claim.ordinal}" in text.getvalue()
    api_diff = token_client(lead).get(f"{API}/projects/demo/releases/v2/diff/?before=v1")
    assert api_diff.status_code == 200 and api_diff.json() == diff.as_dict()
    # Releases of the same gold, nothing changed: no difference.
    v3 = create_release(project=demo, name="v3", user=lead)
    assert diff_releases(v2, v3).as_dict()["counts"] == {"added": 0, "removed": 0, "changed": 0}
    assert GoldRelease.objects.get(pk=v1.pk).sha256 == v1.sha256


def test_diff_lists_rows_added_and_removed(demo, lead):
    dev = create_release(project=demo, name="dev", user=lead, split="judge_dev")
    everything = create_release(project=demo, name="all", user=lead)
    diff = diff_releases(dev, everything)
    assert diff.removed == [] and diff.changed == []
    assert len(diff.added) == everything.row_count - dev.row_count > 0
    assert len(diff_releases(everything, dev).removed) == len(diff.added)


def card_table(card: str, header: str) -> dict[str, list[str]]:
    """The Markdown table under `## header`, each row's cells by its first."""
    section = card.split(f"## {header}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return {
        cells[0]: cells[1:]
        for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows[1:])
    }


def test_the_card_counts_and_kappas_are_the_agreement_reports_and_the_gold_pages(demo, lead):
    decide_support(demo, lead, a_pair_pending_on_support_alone(demo))
    release = create_release(project=demo, name="2026-12-07", user=lead)
    card = release.card
    front, body = card.split("---\n", 2)[1], card.split("---\n", 2)[2]
    assert "task_categories:\n- text-classification" in front
    assert "license:" not in front.replace("# license:", "")  # left for the team
    assert "config_name: claims" in front and "path: data/claims/judge_dev.parquet" in front

    counts = gold_counts(demo)
    table = card_table(body, "Rows by source")
    for label, found in (("claims", counts.claims), ("answers", counts.answers)):
        assert table[label] == [
            str(found[s]) for s in ("agreed", "adjudicated", "imported", "pending")
        ] + [str(found.total())]
    assert int(table["claims"][1]) == 1  # the decision is in it

    report = agreement_report(demo)
    agreement = card_table(body, "Agreement")
    fields = {k: v for k, v in report["slices"]["all"].items() if "kappa" in v}
    assert set(agreement) == set(fields) and fields
    for name, figures in fields.items():
        n, kappa, interval, raw, _ = agreement[name]
        assert int(n) == figures["n"]
        assert kappa == f"{figures['kappa']:.3f}"
        low, high = figures["ci95"]
        assert interval == f"[{low:.3f}, {high:.3f}]"
        assert raw == f"{figures['raw_agreement']:.3f}"
    assert "guideline version: none written" in body  # the demo of these tests has none
    assert "calibration-sample design: not recorded" in body
    assert "claim fields: severity, requires_evidence, evidence, citations" in body


@pytest.mark.parametrize("name", ["", "v 1", "../v1", "-v1", "v1/2", "x" * 65, "é"])
def test_a_bad_name_is_refused_everywhere(demo, lead, name):
    with pytest.raises(ReleaseRefused, match="letters, digits"):
        create_release(project=demo, name=name, user=lead)
    response = token_client(lead).post(
        f"{API}/projects/demo/releases/", {"name": name}, format="json"
    )
    assert response.status_code == 400 and "name" in response.json()
    assert not GoldRelease.objects.exists()


def test_a_name_taken_is_refused_by_the_service_the_api_the_page_and_the_command(demo, lead):
    create_release(project=demo, name="v1", user=lead)
    with pytest.raises(ReleaseNameTaken):
        create_release(project=demo, name="v1", user=lead)
    response = token_client(lead).post(
        f"{API}/projects/demo/releases/", {"name": "v1"}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"name": ["This project already has a release named 'v1'."]}
    browser = Client()
    browser.force_login(lead)
    page = browser.post(reverse("release_new", args=["demo"]), {"release-name": "v1"})
    assert page.status_code == 400
    assert "This project already has a release named" in page.content.decode()
    with pytest.raises(CommandError, match="already has a release named 'v1'"):
        call_command("release_gold", "--project", "demo", "--name", "v1")
    assert GoldRelease.objects.count() == 1


def test_the_gold_page_makes_lists_and_serves_releases(demo, lead):
    browser = Client()
    browser.force_login(lead)
    made = browser.post(
        reverse("release_new", args=["demo"]),
        {"release-name": "v1", "release-item": "answer", "release-decided_only": "on"},
    )
    assert made.status_code == 302 and made["Location"].endswith("/gold/#releases")
    release = GoldRelease.objects.get()
    assert (release.item, release.split, release.decided_only) == ("answer", "all", True)
    assert release.created_by == lead
    rows = list(selectors.release_rows(release))
    assert rows and all(r["item"] == "answer" and r["decided"] for r in rows)
    page = browser.get(reverse("gold", args=["demo"])).content.decode()
    assert 'data-release="v1"' in page and release.sha256[:12] in page
    assert "Dataset card of v1" in page and "## Rows by source" in page
    for fmt in ("csv", "parquet"):
        download = browser.get(reverse("release_download", args=["demo", "v1", fmt]))
        assert download.status_code == 200
    assert browser.get(reverse("release_download", args=["demo", "v9", "jsonl"])).status_code == 404


def test_release_gold_command_writes_a_dataset_folder(demo, tmp_path):
    out = io.StringIO()
    call_command(
        "release_gold",
        "--project",
        "demo",
        "--name",
        "v1",
        "--split",
        "judge_test",
        "--output-dir",
        str(tmp_path / "v1"),
        stdout=out,
    )
    release = GoldRelease.objects.get(name="v1")
    assert release.created_by is None and f"sha256 {release.sha256}" in out.getvalue()
    assert (tmp_path / "v1" / "README.md").read_text() == release.card
    files = sorted(
        p.relative_to(tmp_path / "v1").as_posix() for p in (tmp_path / "v1").rglob("*.parquet")
    )
    assert files == ["data/answers/judge_test.parquet", "data/claims/judge_test.parquet"]
    with pytest.raises(CommandError, match="No project 'nope'"):
        call_command("release_gold", "--project", "nope", "--name", "v2")


# --- Blinding: releases are the leads' -----------------------------------------------------


def test_a_reviewer_reaches_no_release_endpoint_or_page(demo, lead):
    release = create_release(project=demo, name="v1", user=lead)
    reviewer = demo.memberships.filter(role="reviewer").first().user
    api = token_client(reviewer)
    base = f"{API}/projects/demo/releases/"
    for method, url in (
        ("get", base),
        ("post", base),
        ("get", f"{base}v1/"),
        ("get", f"{base}v1/gold.jsonl"),
        ("get", f"{base}v1/gold.csv"),
        ("get", f"{base}v1/gold.parquet"),
        ("get", f"{base}v1/diff/?before=v1"),
        ("get", f"{API}/projects/demo/gold.parquet"),
    ):
        response = getattr(api, method)(url, {"name": "v2"} if method == "post" else None)
        assert response.status_code == 403, url
        assert release.sha256.encode() not in response.content
    browser = Client()
    browser.force_login(reviewer)
    for url in (
        reverse("release_download", args=["demo", "v1", "jsonl"]),
        reverse("release_download", args=["demo", "v1", "parquet"]),
        reverse("gold", args=["demo"]),
        reverse("gold_download", args=["demo", "parquet"]),
    ):
        assert browser.get(url).status_code == 404, url
    assert (
        browser.post(reverse("release_new", args=["demo"]), {"release-name": "v2"}).status_code
        == 404
    )
    assert GoldRelease.objects.count() == 1


def test_the_api_lists_makes_and_reads_releases(demo, lead):
    client = token_client(lead)
    made = client.post(
        f"{API}/projects/demo/releases/",
        {"name": "v1", "judge_split": "judge_dev", "decided_only": True},
        format="json",
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert made["Location"] == body["url"] == f"{API}/projects/demo/releases/v1/"
    assert (body["judge_split"], body["decided_only"], body["created_by"]) == (
        "judge_dev",
        True,
        lead.username,
    )
    assert body["card"].startswith("---\n") and re.fullmatch(r"[0-9a-f]{64}", body["sha256"])
    listed = client.get(f"{API}/projects/demo/releases/").json()
    assert listed["count"] == 1 and listed["results"][0]["name"] == "v1"
    assert "card" not in listed["results"][0]
    assert client.get(f"{API}/projects/demo/releases/v1/").json() == body
    assert client.get(f"{API}/projects/demo/releases/v2/").status_code == 404
    csv_body = b"".join(client.get(body["downloads"]["csv"]).streaming_content).decode()
    assert csv_body.count("\n") == body["row_count"] + 1
    assert client.get(f"{API}/projects/demo/releases/v1/gold.xml").status_code == 404


def test_a_large_gold_set_is_released_by_a_worker(demo, lead, settings):
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 10
    client = token_client(lead)
    response = client.post(f"{API}/projects/demo/releases/", {"name": "big"}, format="json")
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["kind"] == "gold_release" and job["status"] == "succeeded", job
    release = GoldRelease.objects.get(name="big")
    assert job["result"] == {"rows": release.row_count, "release": "big", "sha256": release.sha256}
    downloaded = b"".join(client.get(job["download_url"]).streaming_content)
    assert downloaded == release_bytes(release)
    # The name is checked before the job is queued.
    again = client.post(f"{API}/projects/demo/releases/", {"name": "big"}, format="json")
    assert again.status_code == 400
    browser = Client()
    browser.force_login(lead)
    page = browser.post(reverse("release_new", args=["demo"]), {"release-name": "big2"})
    assert page.status_code == 302 and "/jobs/" in page["Location"]
    assert GoldRelease.objects.filter(name="big2").exists()


def test_the_release_list_costs_one_query_however_many_releases(
    demo, lead, django_assert_num_queries
):
    browser = Client()
    browser.force_login(lead)
    url = reverse("gold", args=["demo"])
    browser.get(url)  # the counts derived and kept
    # the gold page's kept view (test_gold_page: its releases' one query and the gold checks'
    # two included)
    with django_assert_num_queries(9):
        browser.get(url)
    for name in ("v1", "v2", "v3"):
        create_release(project=demo, name=name, user=lead)
    with django_assert_num_queries(9):
        page = browser.get(url).content.decode()
    assert all(f'data-release="{name}"' in page for name in ("v1", "v2", "v3"))


def test_the_gold_page_shows_its_releases_once_and_its_title_is_plain(demo, lead):
    """The releases section sits in the page's content only: once it was pasted into the
    title and the navigation blocks too, and the tab's title held a form."""
    browser = Client()
    browser.force_login(lead)
    create_release(project=demo, name="v1", user=lead)
    page = browser.get(reverse("gold", args=["demo"])).content.decode()
    assert page.count('id="releases"') == 1
    assert page.count('data-release="v1"') == 1
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "<" not in title and "Gold set" in title
