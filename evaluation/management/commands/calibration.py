import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from annotate.gold.splits import DEFAULT_SPLIT, SPLITS
from annotate.models import Project
from evaluation.judges.samples import design_estimates
from evaluation.models import CalibrationDesign, JudgeRun
from evaluation.reports.calibration import calibration_report
from evaluation.reports.strata import BY, with_strata

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


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "A model judge's run against the gold labels (default split judge_test)."

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

    def handle(
        self, *args, project, judge, split, json: bool, seed: int, design, by=None, **options
    ):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        run = JudgeRun.objects.filter(project=found, name=judge).select_related("project").first()
        if run is None:
            names = ", ".join(found.judge_runs.values_list("name", flat=True)) or "none"
            raise CommandError(f"No judge run '{judge}' in '{project}' (runs: {names}).")
        chosen = None
        if design is not None:
            chosen = CalibrationDesign.objects.filter(run=run, pk=design).first()
            if chosen is None:
                ids = ", ".join(str(pk) for pk in run.designs.values_list("pk", flat=True))
                raise CommandError(
                    f"No calibration sample {design} of judge run '{judge}' "
                    f"(its samples: {ids or 'none'})."
                )
            chosen.run, chosen.project = run, found  # already loaded
        report = with_strata(calibration_report(run=run, split=split, seed=seed), by)
        if chosen is not None:
            report = {**report, "design": design_estimates([chosen])[0].as_dict()}
        if json:
            self.stdout.write(jsonlib.dumps(report, indent=2, ensure_ascii=False))
            return
        self._print(report)

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
