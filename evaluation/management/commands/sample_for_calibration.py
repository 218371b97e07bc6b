import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project
from evaluation.judges.samples import (
    DESIGNS,
    SampleRefused,
    design_summary,
    draw_sample,
    sample_rows,
)
from evaluation.models import JudgeRun


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Draw a calibration sample: answers a judge labelled and nobody has, each drawn with a "
        "known probability, sent to the front of the reviewers' queue."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--judge", required=True, help="the judge run's name")
        parser.add_argument(
            "--answers",
            required=True,
            type=float,
            help="B, the expected number of answers to draw (the sum of the π)",
        )
        parser.add_argument("--design", choices=DESIGNS, default="uniform")
        parser.add_argument("--seed", type=int, help="the draw's seed (default: a random one)")
        parser.add_argument("--json", action="store_true", help="print the design as JSON")

    def handle(self, *args, project, judge, answers, design, seed, json: bool, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        run = JudgeRun.objects.filter(project=found, name=judge).select_related("project").first()
        if run is None:
            names = ", ".join(found.judge_runs.values_list("name", flat=True)) or "none"
            raise CommandError(f"No judge run '{judge}' in '{project}' (runs: {names}).")
        try:
            drawn = draw_sample(run=run, budget=answers, design=design, seed=seed)
        except SampleRefused as exc:
            raise CommandError(str(exc)) from exc
        rows = sample_rows(drawn)
        if json:
            out = {
                "design": drawn.pk,
                "kind": drawn.kind,
                "fallback": drawn.fallback or None,
                "seed": drawn.seed,
                "frame": drawn.frame_answers,
                "frame_claims": drawn.frame_claims,
                "expected": drawn.budget,
                "sampled": rows,
            }
            self.stdout.write(jsonlib.dumps(out, indent=2, ensure_ascii=False))
            return
        self.stdout.write(design_summary(drawn, len(rows)))
        self.stdout.write(
            "The sampled answers are at the front of the reviewers' queue; "
            f"`calibration --project {project} --judge {judge} --design {drawn.pk}` "
            "gives the estimate."
        )
