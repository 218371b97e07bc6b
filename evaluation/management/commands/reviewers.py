import json as jsonlib

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project
from evaluation.reports.reviewers import reviewers_report


def _number(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _percent(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as agreement: nothing here needs them
    help = (
        "Per reviewer: tasks, seconds per claim, submissions per day, share overruled, accuracy "
        "on gold checks, the drift flag (since a lead last cleared it) and kappa with each "
        "co-reviewer."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--json", action="store_true", help="print the JSON report")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")

    def handle(self, *args, project, json: bool, seed: int, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        report = reviewers_report(found, seed=seed)
        if json:
            self.stdout.write(jsonlib.dumps(report, indent=2, ensure_ascii=False))
            return
        rows = report["reviewers"]
        if not rows:
            self.stdout.write("No reviewer in this project yet.")
            return
        self.stdout.write(
            f"{'reviewer':<16}{'tasks':>6}{'s/claim':>9}{'p90':>8}{'/day':>7}"
            f"{'overruled':>14}{'checks':>8}{'support acc.':>18}  drift"
        )
        for row in rows:
            spent = row["seconds_per_claim"]
            ruled = (
                f"{_percent(row['overruled_share'])} {row['overruled']}/{row['adjudicated_fields']}"
                if row["overruled_share"] is not None
                else "—"
            )
            support = row["checks"]["accuracy"].get("support") or {}
            accuracy = (
                f"{_percent(support['value'])} {support['correct']}/{support['n']}"
                if support.get("value") is not None
                else "—"
            )
            drift = row["drift"]
            flag = (
                "FLAG (checks " + ", ".join(map(str, drift["checks"])) + ")"
                if drift["flag"]
                else ("none" if drift["trials"] else "—")
            )
            cleared = drift.get("cleared")
            if cleared:
                flag += (
                    f" (cleared by {cleared['by'] or 'a former account'} {cleared['at'][:10]}"
                    f" after {cleared['trials']} claims; {drift['earlier_alarms']} earlier"
                    f" alarm{'' if drift['earlier_alarms'] == 1 else 's'})"
                )
            self.stdout.write(
                f"{row['username']:<16}{row['tasks']:>6}{_number(spent['median']):>9}"
                f"{_number(spent['p90']):>8}{_number(row['per_day']):>7}{ruled:>14}"
                f"{row['checks']['n']:>8}{accuracy:>18}  {flag}"
            )
        self.stdout.write("\nKappa on support with each co-reviewer (n):")
        for row in rows:
            pairs = [
                f"{other} {_number((entry.get('support') or {}).get('kappa'), 2)} "
                f"(n={(entry.get('support') or {}).get('n', 0)})"
                for other, entry in row["kappa_with"].items()
            ]
            self.stdout.write(f"  {row['username']}: {', '.join(pairs) or 'no co-reviewer'}")
        for row in rows:
            for key, reason in row["undefined"].items():
                self.stdout.write(f"  {row['username']}: {key} undefined — {reason}")
