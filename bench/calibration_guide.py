"""Run every command of docs/calibration.md on a synthetic team's project and print what each
one printed: the guide's numbers are this script's output.

Usage: python bench/calibration_guide.py [--keep DIR]   (SQLite in a temporary folder; a few
minutes on one core)

The team: a support bot whose 5,000 answers (2,500 questions, two variants, 1–6 claims each,
about 17,500 claims) a model judge, grader-v2, has graded with a confidence on every claim,
and a budget of 300 answers for two reviewers to label. The world is
tests/evaluation/calibration_world.py's (the one the simulation tests assert on): the judge
is calibrated and its errors concentrate on a fifth of the answers. Because the world is
synthetic, the frame's true unsupported share is known and printed at the end, beside the
estimate. A second, older judge run, grader-v1 (the same calls with one in eight flipped),
is the gate's baseline.

The steps, as the guide tells them:
1. import the answers, add the reviewers, open labelling, import both judge runs;
2. `sample_for_calibration --answers 300 --design active`: the whole budget at once;
3. the reviewers label the first 120 sampled answers (both) and 60 more (one of them):
   `calibration --design ID --plan 0.01` -- a provisional estimate, and the planner;
4. they finish: the estimate is final;
5. the gate, `--min-kappa 0.6 --baseline grader-v1`, and its exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.evaluation.calibration_world import make_world  # noqa: E402

SLUG = "support-bot"
BUDGET = 300
SEED = 7
UNSUPPORTED_LABELS = ("contradicted", "insufficient_evidence")


def write_jsonl(path: Path, rows) -> Path:
    with open(path, "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return path


class Team:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.world = make_world(SEED, answers=5000)
        rng = np.random.default_rng(SEED + 1)
        self.truth = rng.random(self.world.frame_claims) < self.world.p_true
        self.answer_ids = [f"q{a // 2}/{('baseline', 'hybrid')[a % 2]}" for a in range(5000)]
        starts = self.world.starts
        self.claims = {
            self.answer_ids[a]: range(starts[a], starts[a] + self.world.claims[a])
            for a in range(5000)
        }
        self.flip = rng.random(self.world.frame_claims) < 1 / 8  # grader-v1's extra errors
        self.bob_differs = rng.random(self.world.frame_claims) < 0.03

    def bundle(self) -> Path:
        rows = [
            {
                "type": "bundle",
                "corpus_version": "help-centre-2026-11",
                "name": "Support bot",
                "label_schema": {"support": "three_way", "claim_fields": [], "answer_fields": []},
            },
            {"type": "passage", "passage_id": "help:1", "text": "Refunds take five days."},
        ]
        for q in range(2500):
            rows.append(
                {
                    "type": "case",
                    "case_id": f"q{q}",
                    "question": f"Question {q}?",
                    "answerable": True,
                    "adversarial": False,
                }
            )
        for answer_id, claims in self.claims.items():
            sentences = [f"Statement {i} of {answer_id}." for i in range(len(claims))]
            text, spans = "", []
            for sentence in sentences:
                spans.append(
                    {"text": sentence, "start": len(text), "end": len(text) + len(sentence)}
                )
                text += sentence + " "
            case, variant = answer_id.split("/")
            rows.append(
                {
                    "type": "answer",
                    "answer_id": answer_id,
                    "case_id": case,
                    "variant": variant,
                    "text": text.rstrip(),
                    "claims": spans,
                }
            )
        return write_jsonl(self.folder / "answers.jsonl", rows)

    def judge_run(self, name: str, *, flipped: bool) -> Path:
        rows = [
            {
                "type": "run",
                "judge": name,
                "model": "acme/grader",
                "model_version": "2026-11-01",
                "prompt": f"Grade each claim ({name}).",
                "settings": {"temperature": 0},
            }
        ]
        for answer_id, claims in self.claims.items():
            for index, c in enumerate(claims):
                unsupported = bool(self.world.judge[c]) ^ (flipped and bool(self.flip[c]))
                label = UNSUPPORTED_LABELS[c % 2] if unsupported else "supported"
                p = float(self.world.confidence[c])
                rows.append(
                    {
                        "type": "verdict",
                        "answer_id": answer_id,
                        "claim_index": index,
                        "raw": json.dumps({"label": label}),
                        "label": label,
                        "confidence": round(1 - p if flipped and self.flip[c] else p, 4),
                    }
                )
        return write_jsonl(self.folder / f"{name}.jsonl", rows)

    def labels(self, reviewer: str, answer_ids: list[str], path: str) -> Path:
        rows = []
        for answer_id in answer_ids:
            claims = []
            for index, c in enumerate(self.claims[answer_id]):
                unsupported = bool(self.truth[c]) ^ (
                    reviewer == "bob" and bool(self.bob_differs[c])
                )
                # the same subtype the judges use for the claim: they differ on support only
                support = UNSUPPORTED_LABELS[c % 2] if unsupported else "supported"
                claims.append({"index": index, "support": support})
            rows.append({"answer_id": answer_id, "reviewer": reviewer, "claims": claims})
        return write_jsonl(self.folder / path, rows)

    def true_share(self, frame: set[str]) -> float:
        cs = [c for a in frame for c in self.claims[a]]
        return float(self.truth[cs].mean())


def run(env: dict, *args: str, show: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if show:
        print(f"$ python manage.py {shlex.join(args)}")
        print(done.stdout.rstrip())
        if done.stderr.strip():
            print(done.stderr.rstrip())
        print(f"(exit {done.returncode})\n")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the database and files in this folder")
    options = parser.parse_args()
    folder = options.keep or Path(tempfile.mkdtemp(prefix="calibration-guide-"))
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "guide.sqlite3"
    database.unlink(missing_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CLAIMDESK_TASKS": "immediate",
    }
    team = Team(folder)
    run(env, "migrate", "--verbosity=0", show=False)
    print("== 1. The answers, the reviewers and the judge's runs ==\n")
    run(env, "import_bundle", str(team.bundle()), "--project", SLUG)
    for name, role in (("alice", "reviewer"), ("bob", "reviewer"), ("dana", "lead")):
        run(env, "add_member", SLUG, name, "--role", role, show=False)
    run(env, "open_labelling", "--project", SLUG, show=False)
    run(env, "import_judge_run", str(team.judge_run("grader-v1", flipped=True)), "--project", SLUG)
    run(env, "import_judge_run", str(team.judge_run("grader-v2", flipped=False)), "--project", SLUG)

    print("== 2. The whole budget as one active calibration sample ==\n")
    args = ["--project", SLUG, "--judge", "grader-v2", "--answers", str(BUDGET)]
    run(env, "sample_for_calibration", *args, "--design", "active", "--seed", "1")
    design, sampled = _newest_sample(env)
    frame = set(team.answer_ids)  # nobody had labelled anything when it was drawn

    print("== 3. Half-way: 120 answers labelled by both reviewers, 60 by one ==\n")
    run(
        env,
        "import_labels",
        str(team.labels("alice", sampled[:180], "alice-1.jsonl")),
        "--project",
        SLUG,
        show=False,
    )
    run(
        env,
        "import_labels",
        str(team.labels("bob", sampled[:120], "bob-1.jsonl")),
        "--project",
        SLUG,
        show=False,
    )
    show = ["--project", SLUG, "--judge", "grader-v2", "--design", str(design)]
    run(env, "calibration", *show, "--plan", "0.01")

    print("== 4. Every sampled answer labelled by both ==\n")
    run(
        env,
        "import_labels",
        str(team.labels("alice", sampled[180:], "alice-2.jsonl")),
        "--project",
        SLUG,
        show=False,
    )
    run(
        env,
        "import_labels",
        str(team.labels("bob", sampled[120:], "bob-2.jsonl")),
        "--project",
        SLUG,
        show=False,
    )
    run(env, "calibration", *show, "--plan", "0.01")
    print(
        f"The frame's true unsupported share (known: the world is synthetic): "
        f"{team.true_share(frame):.4f}\n"
    )

    print("== 5. The judge gate ==\n")
    gate = ["--project", SLUG, "--judge", "grader-v2", "--split", "all"]
    run(env, "calibration", *gate, "--min-kappa", "0.6", "--baseline", "grader-v1")
    run(env, "calibration", *gate, "--min-kappa", "0.9")
    print("== 6. The run's page, read back ==\n")
    print(_page(env, "?plan=0.01&min_kappa=0.6&baseline=grader-v1&split=all"))
    print(f"files and database: {folder}")


PAGE = """
import django, re; django.setup()
from django.test import Client
from django.contrib.auth import get_user_model
from evaluation.models import JudgeRun
run = JudgeRun.objects.get(name="grader-v2")
client = Client()
client.force_login(get_user_model().objects.get(username="dana"))
html = client.get(f"/p/support-bot/judges/{run.pk}/%s", HTTP_HOST="localhost").content.decode()
def text(fragment):
    return re.sub(r"\\s+", " ", re.sub(r"<[^>]+>", " ", fragment)).strip()
for section in ("gate-verdict", "plan-basis", "plan"):
    found = re.search(r'id="' + section + r'"[^>]*>(.*?)</(div></div>|p>|table>)', html, re.S)
    print(section + ":", text(found.group(1)) if found else "(absent)")
    print()
"""


def _page(env: dict, query: str) -> str:
    """What the lead's run page shows in its gate and planner sections, as text."""
    done = subprocess.run(
        [sys.executable, "-c", PAGE % query],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _newest_sample(env: dict) -> tuple[int, list[str]]:
    """The sample just drawn: its id and its answers in answer order (the rows
    `sample_for_calibration --json` prints), read as the reviewers' queue would serve them."""
    code = (
        "import django, json; django.setup()\n"
        "from evaluation.models import CalibrationDesign\n"
        "from evaluation.judges.samples import sample_rows\n"
        "d = CalibrationDesign.objects.latest('pk')\n"
        "print(json.dumps([d.pk, [r['answer_id'] for r in sample_rows(d)]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    design, answers = json.loads(done.stdout)
    return design, answers


if __name__ == "__main__":
    main()
