"""`calibration`: a judge run against gold, with a calibration sample's estimate (--design),
the budget planner (--plan) and the judge gate (--min-kappa, --baseline).

Exit codes, for CI pipelines: 0 the report was printed (and the gate, if asked, passed);
1 the gate failed (the report is printed first, the reasons on stderr); 2 the command could
not run (a bad argument, an unknown project, judge run, baseline or sample).
"""

import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from annotate.gold.splits import DEFAULT_SPLIT, SPLITS
from annotate.models import Project
from evaluation.judges.samples import design_estimates
from evaluation.models import CalibrationDesign, JudgeRun
from evaluation.reports.calibration import calibration_report
from evaluation.reports.calibration_plan import plan_report
from evaluation.reports.judge_gate import gate_report
from evaluation.reports.judge_gold import load_gold
from evaluation.reports.plan_gate_params import check_half_width, check_min_kappa
from evaluation.reports.strata import BY, with_strata

GATE_FAILED = 1  # the gate's verdict: a CI step fails on it
CANNOT_RUN = 2  # as argparse's usage errors: nothing was judged

# The text lists this many disagreements; --json (and the run's page) has every one.
DISAGREEMENTS_SHOWN = 20


def _rate(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(ci) -> str:
    return f"[{_rate(ci[0])}, {_rate(ci[1])}]" if ci else "—"


def rogan_gladen_text(block: dict) -> str:
    """Rogan–Gladen as a person reads it: refused with the reason, or the estimate, saying
    when the formula left [0, 1] and by how much, and the J interval the refusal rule reads."""
    if "refused" in block:
        return f"Rogan–Gladen: refused — {block['refused']}"
    clipped = (
        f" (clipped to [0, 1]: the formula gives {block['unclipped']:.3f})"
        if block["unclipped"] != block["estimate"]
        else ""
    )
    own = block.get("unclipped_ci95")
    interval_clipped = (
        f" (clipped to [0, 1]: the bootstrap's own ends {_interval(own)})"
        if own and (own[0] < 0 or own[1] > 1)
        else ""
    )
    return (
        f"Rogan–Gladen: {_rate(block['estimate'])}{clipped} 95% {_interval(block['ci95'])}"
        f"{interval_clipped}; "
        f"TPR + TNR − 1 = {_rate(block['youden'])} 95% {_interval(block['youden_ci95'])}"
    )


def share_text(block: dict) -> str:
    """A share clipped to [0, 1] as a person reads it: the estimate and interval, and when
    they were clipped, the unclipped ones; or refused with the reason."""
    if block.get("refused"):
        return f"refused — {block['refused']}"
    line = f"{_rate(block['estimate'])} 95% {_interval(block['ci95'])}"
    if block.get("clipped"):
        unclipped = block["unclipped"]
        line += (
            f" (clipped to [0, 1]: unclipped {unclipped['estimate']:.3f} "
            f"{_interval(unclipped['ci95'])})"
        )
    return line


def ppi_plus_plus_text(block: dict) -> str:
    """The headline: PPI++ with its tuned λ (0: the gold-only mean, 1: classic PPI)."""
    line = f"PPI++ (headline): {share_text(block)}"
    if not block.get("refused"):
        line += f"; λ = {block['lambda']:.3f}"
    return line


def ppi_text(block: dict) -> str:
    return f"PPI: {share_text(block)}"


def strata_text(r: dict) -> list[str]:
    """`--by`: each stratum's PPI++ estimate with its counts, then the stratified one."""
    lines = [f"  by {r['by']}: PPI++ within each stratum, weighted by its target claims"]
    for row in r["strata"]:
        lines.append(
            f"    {row['name']:<24} n = {row['n']:<5} target {row['target_n']:<6} {share_text(row)}"
        )
    lines.append(f"    stratified: {share_text(r['stratified'])}")
    return lines


def three_way_text(block: dict) -> list[str]:
    """A three-way project's shares of contradicted and of insufficient_evidence."""
    if block.get("refused"):
        return [f"three-way shares: refused — {block['refused']}"]
    return [
        f"{label.replace('_', ' ')} (PPI++): {share_text(share)}; λ = {share['lambda']:.3f}"
        for label, share in block.items()
    ]


def design_text(d: dict) -> str:
    """A calibration sample's estimate, with its counts and whether it is provisional."""
    clipped = (
        f" (clipped to [0, 1]: {d['unclipped']['estimate']:.3f} "
        f"{_interval(d['unclipped']['ci95'])})"
        if d["clipped"]
        else ""
    )
    line = (
        f"calibration sample {d['id']} ({d['kind']}, seed {d['seed']}): "
        f"{_rate(d['estimate'])} 95% {_interval(d['ci95'])}{clipped} of the frame's "
        f"{d['frame_claims']} judged claims; sampled {d['answers_sampled']}, decided "
        f"{d['decided']}, waiting {d['waiting']}"
    )
    if d["provisional"]:
        line += f"\n    PROVISIONAL: {d['provisional_reason']}"
    return line


def _half(value) -> str:
    return "—" if value is None else f"±{value:.3f}"


def plan_text(plan: dict) -> list[str]:
    """The budget planner as a person reads it (`calibration --plan WIDTH`)."""
    width = plan["half_width"]
    weighted = " (each weighted 1/π: all drawn by calibration samples)"
    lines = [
        f"  budget planner: a calibration sample for a 95% half-width of ±{width:g}, from "
        f"the residuals of {plan['gold_answers']} gold answers"
        f"{weighted if plan['gold_weighted'] else ''}; frame "
        f"{plan['frame_answers']} answers ({plan['frame_claims']} judged claims)"
    ]
    now = plan["current"]
    if now["half_width"] is not None:
        lines.append(
            f"    now: {now['method']} {now['estimate']:.3f} {_half(now['half_width'])} from "
            f"{now['answers']} labelled answers"
            + (f" ({now['claims']} claims)" if now["claims"] is not None else "")
            + (" (provisional)" if now["provisional"] else "")
        )
    if plan["refused"]:
        return [*lines, f"    refused — {plan['refused']}"]
    for design in ("uniform", "active"):
        d = plan[design]
        if d is None:
            lines.append(f"    {design}: not available — {plan['active_unavailable']}")
            continue
        ci = d["expected_ci95"]
        expected = f", so about [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        lines.append(
            f"    {design}: label {d['answers']} more answers (about {d['claims']:.0f} claims); "
            f"expected half-width {_half(d['expected_half_width'])}{expected}"
        )
        sample = plan["planned_sample"]
        if d["planned"] and sample and sample["kind"] == design:
            lines.append(
                f"      calibration sample {sample['design']} ({sample['answers']:g} expected "
                f"answers), once labelled: expected {_half(d['planned']['expected_half_width'])}"
            )
    return lines


def gate_text(gate: dict) -> list[str]:
    """The judge gate as a person (or a CI log) reads it."""
    lines = [f"  judge gate: {'PASSED' if gate['passed'] else 'FAILED'} — {gate['summary']}"]
    lines += [f"    - {reason}" for reason in gate["reasons"]]
    b = gate["baseline"]
    if b is not None:
        p = "undefined (no discordant item)" if b["p_value"] is None else f"{b['p_value']:.4g}"
        lines.append(
            f"    McNemar ({b['scale'].replace('_', '-')}, {b['items']} gold items both "
            f"scored): only this judge right {b['candidate_only']}, only {b['judge']} right "
            f"{b['baseline_only']}, exact p = {p}"
        )
    return lines


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "A model judge's run against the gold labels (default split judge_test). Exit codes: "
        "0 printed (and the gate, if asked, passed); 1 the judge gate failed (--min-kappa, "
        "--baseline); 2 the command could not run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--judge", required=True, help="the run's name")
        parser.add_argument("--split", choices=SPLITS, default=DEFAULT_SPLIT)
        parser.add_argument("--json", action="store_true", help="print the JSON report")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument(
            "--by",
            choices=BY,
            help="strata: PPI++ per slice (answerable, unanswerable, adversarial) or per "
            "variant, and the stratified estimate",
        )
        parser.add_argument(
            "--design",
            type=int,
            help="a calibration sample's id (sample_for_calibration): its estimate of its "
            "frame's unsupported share, beside the corrected ones",
        )
        parser.add_argument(
            "--plan",
            metavar="WIDTH",
            help="budget planner: how many more answers (and claims) a calibration sample "
            "needs for a 95%% half-width of WIDTH (e.g. 0.05), uniform and active",
        )
        parser.add_argument(
            "--min-kappa",
            metavar="K",
            help="judge gate: exit 1 when the lower end of the judge's 95%% kappa interval is "
            "under K",
        )
        parser.add_argument(
            "--baseline",
            metavar="NAME",
            help="judge gate: also exit 1 when an exact McNemar test on the gold items both "
            "runs scored finds this judge worse than judge run NAME at the 5%% level "
            "(needs --min-kappa)",
        )

    def handle(
        self, *args, project, judge, split, json: bool, seed: int, design, by=None, **options
    ):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.", returncode=CANNOT_RUN)
        run = JudgeRun.objects.filter(project=found, name=judge).select_related("project").first()
        if run is None:
            names = ", ".join(found.judge_runs.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"No judge run '{judge}' in '{project}' (runs: {names}).", returncode=CANNOT_RUN
            )
        half_width, min_kappa, baseline = self._plan_and_gate_options(found, run, options)
        chosen = None
        if design is not None:
            chosen = CalibrationDesign.objects.filter(run=run, pk=design).first()
            if chosen is None:
                ids = ", ".join(str(pk) for pk in run.designs.values_list("pk", flat=True))
                raise CommandError(
                    f"No calibration sample {design} of judge run '{judge}' "
                    f"(its samples: {ids or 'none'}).",
                    returncode=CANNOT_RUN,
                )
            chosen.run, chosen.project = run, found  # already loaded
        # One read of the gold for the report, the plan and the gate.
        gold = load_gold(found) if half_width is not None or min_kappa is not None else None
        report = with_strata(calibration_report(run=run, split=split, seed=seed, gold=gold), by)
        if chosen is not None:
            report = {**report, "design": design_estimates([chosen])[0].as_dict()}
        if half_width is not None:
            plan = plan_report(run=run, split=split, half_width=half_width, gold=gold)
            report = {**report, "plan": plan}
        if min_kappa is not None:
            gate = gate_report(
                run=run, report=report, min_kappa=min_kappa, baseline=baseline, gold=gold
            )
            report = {**report, "gate": gate}
        if json:
            self.stdout.write(jsonlib.dumps(report, indent=2, ensure_ascii=False))
        else:
            self._print(report)
        if min_kappa is not None and not report["gate"]["passed"]:
            failed = "; ".join(r for r in report["gate"]["reasons"])
            raise CommandError(f"judge gate failed: {failed}", returncode=GATE_FAILED)

    def _plan_and_gate_options(self, project, run, options):
        """--plan, --min-kappa and --baseline checked before anything is computed."""
        try:
            half_width = None if options["plan"] is None else check_half_width(options["plan"])
            min_kappa = (
                None if options["min_kappa"] is None else check_min_kappa(options["min_kappa"])
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=CANNOT_RUN) from None
        name = options["baseline"]
        if name is None:
            return half_width, min_kappa, None
        if min_kappa is None:
            raise CommandError(
                "--baseline is part of the judge gate: give --min-kappa too (-1 to gate on the "
                "baseline alone)",
                returncode=CANNOT_RUN,
            )
        baseline = JudgeRun.objects.filter(project=project, name=name).first()
        if baseline is None or baseline.pk == run.pk:
            names = ", ".join(project.judge_runs.exclude(pk=run.pk).values_list("name", flat=True))
            raise CommandError(
                f"No other judge run '{name}' in '{project.slug}' to compare with "
                f"(runs: {names or 'none'}).",
                returncode=CANNOT_RUN,
            )
        baseline.project = project
        return half_width, min_kappa, baseline

    def _print(self, r) -> None:
        out = self.stdout.write
        out(
            f"{r['judge']} ({r['model']}{'@' + r['model_version'] if r['model_version'] else ''})"
            f" on {r['project']}, split {r['split']}"
        )
        if r["run"]["self_judged"]:
            out(
                f"WARNING self-judging: {r['run']['self_judged']} verdict(s) grade the judge's "
                "own generator"
            )
        out(
            f"  gold claims {r['gold_items']}: scored n = {r['n']}, malformed {r['malformed']}, "
            f"timeouts {r['timeouts']}, no verdict {r['missing']}; coverage {_rate(r['coverage'])}"
        )
        sources = r["gold_sources"]
        out(
            f"  gold from: {sources['agreed']} agreed, {sources['adjudicated']} adjudicated, "
            f"{sources['imported']} imported (no second reviewer)"
        )
        if r["n"] == 0:
            out("  nothing scored on this split: no gold claim the judge labelled")
        elif r["small_sample"]:
            out("  small sample (n < 30): read the counts, not only the rates")
        kappa = _rate(r["kappa"]) if r["kappa"] is not None else "undefined"
        scale = "three-way" if r["scale"] == "three_way" else "binary"
        out(
            f"  {scale}: accuracy {_rate(r['accuracy'])}  kappa {kappa}  "
            f"(human–human kappa {_rate(r['human_kappa'])}, n = {r['human_agreement']['n']}; "
            f"{r['human_agreement']['no_second_reviewer']} gold claim(s) without a second "
            "reviewer)"
        )
        if r["kappa"] is None and r["kappa_undefined_reason"]:
            out(f"    ({r['kappa_undefined_reason']})")
        b = r["binary"]
        if r["scale"] == "three_way" or r["confusion"] is None:
            # On the binary scale the line above already is this one.
            out(
                f"  binary (supported vs unsupported): accuracy {_rate(b['accuracy'])}  "
                f"kappa {_rate(b['kappa']) if b['kappa'] is not None else 'undefined'}  "
                f"n = {b['n']}"
            )
        out(f"  unsupported = positive: TPR {_rate(r['tpr'])}  TNR {_rate(r['tnr'])}")
        confusion = r["confusion"] or b["confusion"]
        labels = confusion["labels"]
        out("  confusion (rows gold, columns judge):")
        out("    " + " " * 22 + "".join(f"{label[:12]:>14}" for label in labels))
        for label, row in zip(labels, confusion["matrix"], strict=True):
            out(f"    {label:<22}" + "".join(f"{cell:>14}" for cell in row))
        out("  per label: precision / recall / F1 (gold n)")
        for s in r["per_label"]:
            out(
                f"    {s['label']:<22}{_rate(s['precision']):>7}{_rate(s['recall']):>7}"
                f"{_rate(s['f1']):>7}  ({s['support']})"
            )
        c = r["corrected"]
        out(
            f"  corrected on {c['target_n']} judged claims of answers nobody labelled: "
            f"p_obs {_rate(c['p_obs'])}"
        )
        excluded = c["excluded"]
        out(
            f"    excluded from gold and target: {excluded['pending_dispute']} in answers with a "
            f"pending dispute, {excluded['single_reviewer']} in answers with one reviewer"
        )
        if c["provisional"]:
            out(f"    PROVISIONAL: {c['provisional_reason']}")
        out(f"    {ppi_plus_plus_text(c['ppi_plus_plus'])}")
        out(f"    {ppi_text(c['ppi'])}")
        out(f"    {rogan_gladen_text(c['rogan_gladen'])}")
        for line in three_way_text(c["three_way"]) if "three_way" in c else []:
            out(f"    {line}")
        for line in strata_text(r) if "by" in r else []:
            out(line)
        if "design" in r:
            out(f"    {design_text(r['design'])}")
        disagreements = r["disagreements"]
        out(f"  disagreements with gold: {len(disagreements)}")
        for d in disagreements[:DISAGREEMENTS_SHOWN]:
            out(
                f"    {d['answer_id']} claim {d['claim_index']}: gold {d['gold']}, "
                f"judge {d['judge']}  {d['url'] or ''}"
            )
        if len(disagreements) > DISAGREEMENTS_SHOWN:
            out(
                f"    … and {len(disagreements) - DISAGREEMENTS_SHOWN} more: --json lists "
                "every one (the run's page too, with a CSV of all)"
            )
        out(f"  quotes not found in their evidence: {r['run']['quotes_not_found']}")
        for line in [
            *(plan_text(r["plan"]) if "plan" in r else []),
            *(gate_text(r["gate"]) if "gate" in r else []),
        ]:
            out(line)
