import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project
from evaluation.reports.agreement import ANSWER_REPORT_FIELDS, CLAIM_REPORT_FIELDS, agreement_report


def _rate(value) -> str:
    return "—" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Inter-reviewer agreement per field, slice and reviewer pair."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--json", action="store_true", help="print the JSON report")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument(
            "--guideline-version",
            type=int,
            default=None,
            metavar="N",
            help="only the label sets made under version N of the guidelines (0: before any)",
        )

    def handle(self, *args, project, json: bool, seed: int, guideline_version, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        if guideline_version is not None and not 0 <= guideline_version <= found.guidelines_version:
            raise CommandError(
                f"No guidelines version {guideline_version} in '{project}': its guidelines are "
                f"at v{found.guidelines_version}."
            )
        report = agreement_report(found, seed=seed, guideline_version=guideline_version)
        if guideline_version is not None and not json:
            self.stdout.write(
                f"Label sets made under guidelines v{guideline_version} only"
                if guideline_version
                else "Label sets made before any guidelines only"
            )
        if json:
            self.stdout.write(_dumps(report))
            return
        shown = shown_fields(found)
        pairs = report["pairs"]
        notes = [p["identical_label_sets_note"] for p in pairs if p["identical_label_sets"]]
        for note in notes:
            self.stdout.write(f"WARNING {note}")
        # Every pair one label set twice: no kappa in the slices measures anything either.
        only_identical = bool(notes) and len(notes) == len(pairs)
        if only_identical:
            self.stdout.write("No kappa shown: a label set agrees with its copy whatever it says.")
        for slice_name, fields in report["slices"].items():
            self.stdout.write(f"\n{slice_name}")
            if not any(stats.get("n") for stats in fields.values()):
                self.stdout.write("  nothing labelled by two reviewers in this slice")
                continue
            header = f"  {'field':<18}{'n':>6}{'raw':>8}{'kappa':>8}  {'95% CI':<18}weighting"
            self.stdout.write(header)
            for name, stats in fields.items():
                if name not in shown:
                    continue
                if name == "evidence":
                    overlap = _rate(stats["mean_jaccard"])
                    self.stdout.write(
                        f"  {'evidence overlap':<18}{stats['n']:>6}{overlap:>8}"
                        "  (mean Jaccard of the chosen passages; "
                        f"{stats['neither']} where neither named one, not scored)"
                    )
                    continue
                ci = stats["ci95"]
                interval = f"[{_rate(ci[0])}, {_rate(ci[1])}]" if ci else "—"
                kappa = _rate(stats["kappa"])
                if only_identical:
                    kappa, interval = "ident.", "—"
                elif stats["kappa"] is None and stats["kappa_undefined_reason"]:
                    kappa = "undef."
                self.stdout.write(
                    f"  {name:<18}{stats['n']:>6}{_rate(stats['raw_agreement']):>8}{kappa:>8}"
                    f"  {interval:<18}{stats['weighting'] or 'none'}"
                )
                if "alpha" in stats:
                    self.stdout.write(f"  {'':<18}{every_label_set(stats)}")
        imported = report.get("gold_without_second_reviewer") or {}
        if imported.get("answers"):
            sources = ", ".join(f"'{source}'" for source in imported["sources"])
            self.stdout.write(
                f"\n{imported['answers']} answer(s) ({imported['claims']} claim(s)) have imported "
                f"gold from {sources} (no second reviewer, so no agreement)"
            )
        small = [
            f"{s}/{f}"
            for s, fields in report["slices"].items()
            for f, st in fields.items()
            if st.get("small_sample") and st["n"] and f in shown
        ]
        if small:
            self.stdout.write(
                f"\nSmall samples (n < 30; with n = 10 one item moves raw agreement by 10 points): "
                f"{', '.join(small)}"
            )


def every_label_set(stats: dict) -> str:
    """A field's agreement over every label set (more than two on some answer), in words."""

    def figure(value, ci, reason) -> str:
        if value is None:
            return f"undefined ({reason})"
        return f"{value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    level = "nominal" if "fleiss_n" in stats else "ordinal"
    words = (
        f"every label set: {stats['alpha_n']} items, up to {stats['raters']} label sets, "
        f"alpha ({level}) "
        + figure(stats["alpha"], stats["alpha_ci95"], stats["alpha_undefined_reason"])
    )
    if level == "nominal":
        fleiss = figure(
            stats["fleiss_kappa"], stats["fleiss_ci95"], stats["fleiss_undefined_reason"]
        )
        words += f", Fleiss' kappa {fleiss} over {stats['fleiss_n']} items"
    return words + f", all agree on {stats['all_agree']}"


def shown_fields(project: Project) -> set[str]:
    """The report's fields a person reads: in a binary project support is already supported
    vs unsupported, so support_binary (kept in the JSON, as SPEC.md asks) would repeat it."""
    every = {*CLAIM_REPORT_FIELDS, *ANSWER_REPORT_FIELDS, "evidence"}
    return every - {"support_binary"} if project.schema.binary else every


def _dumps(report) -> str:
    return jsonlib.dumps(report, indent=2, ensure_ascii=False)
