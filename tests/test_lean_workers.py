"""A web worker that serves the labelling pages carries no statistics stack (issue #12: workers
were 211-216 MB before serving anything heavy, because the URLconf imported numpy, scipy,
scikit-learn and pandas). Checked in a fresh interpreter: the test process itself has them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "scipy", "sklearn", "pandas")

PROBE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.urls import get_resolver, reverse
resolver = get_resolver()
resolver.url_patterns  # the whole URLconf, as a worker loads it on its first request
import importlib, pkgutil, annotate
for found in pkgutil.walk_packages(annotate.__path__, "annotate."):  # every view and selector
    if ".migrations" not in found.name:
        importlib.import_module(found.name)
from django.core.management import call_command
call_command("check", verbosity=0)  # what every management command runs first
reverse("evaluation:report", kwargs={"slug": "x"})
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


def probe(tmp_path, instead: str | None = None) -> list[str]:
    """Run PROBE in a fresh interpreter, its last step replaced by `instead` when given; the
    statistics libraries it loaded. No database is touched."""
    code = PROBE if instead is None else PROBE.replace(PROBE_LAST, instead)
    env = {**os.environ, "CLAIMDESK_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-c", code % (HEAVY,)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


PROBE_LAST = 'reverse("evaluation:report", kwargs={"slug": "x"})'


def test_the_urlconf_and_the_labelling_views_load_no_statistics_library(tmp_path):
    assert probe(tmp_path) == []


def test_a_statistics_page_s_view_loads_on_its_first_request(tmp_path):
    """The lazy view imports its real module when first asked: the URLconf works, and what
    the module imports (at most what computing a report needs) comes only then."""
    probe(
        tmp_path,
        "from django.urls import resolve\n"
        'assert "evaluation.views.agreement" not in sys.modules\n'
        'resolve("/p/x/agreement/").func.view  # the lazy view, asked for its real one\n'
        'assert "evaluation.views.agreement" in sys.modules',
    )


def test_the_set_up_page_s_blinding_check_loads_no_statistics_library(tmp_path):
    """The check needs the Kolmogorov-Smirnov statistic only; scipy's ks_2samp, imported for
    it, took a web worker from 82 to 206 MB on the set-up page's first view."""
    loaded = probe(
        tmp_path,
        "from annotate.projects import blinding\n"
        "values = {v: {k: [i %% 3 + 5 * (v == 'b') for i in range(40)] for k in blinding.FEATURES}"
        " for v in ('a', 'b')}\n"
        "assert blinding.visible_differences(values)",
    )
    assert loaded == []


def test_the_report_pages_read_stored_reports_without_numpy(tmp_path):
    """The agreement and evaluation pages render stored reports; their views loaded numpy
    through one pure helper (one_label_reason) and two metrics (latency, bootstrap) that
    imported it at the top: 31 and 25 MB of a worker that only showed the pages."""
    loaded = probe(tmp_path, "import evaluation.views.agreement, evaluation.views.report  # noqa")
    assert loaded == []


def test_the_judges_page_and_its_upload_load_no_statistics_library(tmp_path):
    """The list of runs, the upload form and the upload's answer compute no statistic; in
    the run pages' module they took a web worker from 80 to 204 MB on the first view."""
    loaded = probe(
        tmp_path,
        "from django.urls import resolve\n"
        'for path in ("/p/x/judges/", "/p/x/judges/upload/"):\n'
        "    resolve(path).func.view  # the lazy view's real module, imported\n"
        'assert "evaluation.judges.list_views" in sys.modules',
    )
    assert loaded == []


def test_the_api_schema_loads_no_statistics_library(tmp_path):
    """drf-spectacular walks every pattern of the site asking for `cls`; a lazy function view
    answered by importing its module, the statistics pages' included (200 MB for the schema
    behind /api/docs/). The schema is generated whole all the same."""
    loaded = probe(
        tmp_path,
        "from drf_spectacular.generators import SchemaGenerator\n"
        "schema = SchemaGenerator().get_schema(request=None, public=True)\n"
        'assert "/api/v1/projects/{slug}/judge-runs/{run_id}/calibration/" in schema["paths"]\n'
        'assert "/api/v1/projects/{slug}/agreement/" in schema["paths"]',
    )
    assert loaded == []


SHOW = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
settings.ALLOWED_HOSTS = ["testserver"]
client = Client()
client.force_login(get_user_model().objects.get(username="lead"))
pages = {url: client.get(url).content.decode() for url in sys.argv[1:]}
print(json.dumps({"pages": pages, "loaded": sorted(m for m in %r if m in sys.modules)}))
"""


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_report_pages_show_stored_reports_without_the_statistics_stack(tmp_path):
    """A worker computes the agreement, evaluation and calibration reports; a web worker
    only shows them. Shown by a fresh process, each page carries its report, and none loaded
    numpy, scipy, scikit-learn or pandas: a run's page imported them all (76 -> 198 MB, and
    1.7 s, on its first view at 10,000 answers) to show what was stored. The API's answers
    of the same reports, likewise."""
    from annotate.common import computed
    from annotate.gold.splits import DEFAULT_SPLIT
    from evaluation.judges.runs import import_judge_run
    from evaluation.reports.plan_gate_params import DEFAULT_HALF_WIDTH, plan_key
    from tests.conftest import FIXTURES, labelled_demo
    from tests.workers import child_env

    project = labelled_demo(leads=("lead",))
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project).run
    stored = {
        "agreement": "",
        "evaluation": "",
        "calibration": f"{run.pk}:{DEFAULT_SPLIT}",
        # the run's page shows the budget planner's default plan, a stored report too
        "calibration-plan": plan_key(run.pk, DEFAULT_SPLIT, DEFAULT_HALF_WIDTH, None),
    }
    for kind, key in stored.items():
        computed.refresh(project_id=project.pk, kind=kind, key=key)
    urls = {
        "agreement": reverse("agreement", kwargs={"slug": project.slug}),
        "evaluation": reverse("evaluation:report", kwargs={"slug": project.slug}),
        "calibration": reverse("judge_run", kwargs={"slug": project.slug, "run_pk": run.pk}),
        # The API's answers of the same stored reports.
        "agreement API": f"/api/v1/projects/{project.slug}/agreement/",
        "evaluation API": f"/api/v1/projects/{project.slug}/evaluation/",
        "calibration API": f"/api/v1/projects/{project.slug}/judge-runs/{run.pk}/calibration/",
    }
    out = subprocess.run(
        [sys.executable, "-c", SHOW % (HEAVY,), *urls.values()],
        cwd=ROOT,
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    marks = {
        "agreement": "Cohen&#x27;s kappa with 95% intervals, slice all",
        "evaluation": 'id="retrieval-title"',
        "calibration": 'id="calibration-charts"',
        "agreement API": '"slices"',
        "evaluation API": '"retrieval"',
        "calibration API": '"human_kappa"',
    }
    for kind, url in urls.items():
        assert marks[kind] in shown["pages"][url], kind  # the report, not the waiting page
    assert shown["loaded"] == []
