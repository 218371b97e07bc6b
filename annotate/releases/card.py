"""A release's dataset card: Markdown in the Hugging Face card format (YAML front matter with
`configs` naming the folder's Parquet files, task categories, no license: the team chooses
one), then what the gold holds -- rows by source (agreed, adjudicated, imported, pending),
the reviewers' agreement per field with its 95% interval, read from the project's agreement
report (evaluation.reports.agreement), the label schema, the current guidelines version, and
the calibration-sample design, which claimdesk does not record yet."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from annotate.gold.pairs import ADJUDICATED, AGREED, IMPORTED, PENDING
from annotate.models import Project

SOURCES = (AGREED, ADJUDICATED, IMPORTED, PENDING)
ITEM_CONFIGS = {"claim": "claims", "answer": "answers"}
NOT_RECORDED = "not recorded"


@dataclass
class ReleaseCounts:
    """What a release's rows hold, counted as they are written: rows by item and source
    (pairs.row_state of the row's `gold_source`), and by item and judge split (the files of
    its dataset folder)."""

    by_source: dict[str, Counter] = field(default_factory=dict)
    partitions: Counter = field(default_factory=Counter)

    def add(self, row: dict, state: str) -> None:
        self.by_source.setdefault(row["item"], Counter())[state] += 1
        self.partitions[(row["item"], row["judge_split"])] += 1

    def partition_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (item, split), n in sorted(self.partitions.items()):
            out.setdefault(item, {})[split] = n
        return out


def data_path(item: str, split: str) -> str:
    """A partition's file in the release folder: data/claims/judge_dev.parquet ..."""
    return f"data/{ITEM_CONFIGS[item]}/{split}.parquet"


def _front_matter(project: Project, name: str, partitions: dict[str, dict[str, int]]) -> str:
    lines = [
        "---",
        f"pretty_name: {_yaml_string(f'{project.name} gold {name}')}",
        "# license: choose the license your team publishes this gold set under",
        "task_categories:",
        "- text-classification",
        "tags:",
        "- claimdesk",
        "- hallucination-detection",
        "- retrieval-augmented-generation",
        "configs:",
    ]
    first = True
    for item in ("claim", "answer"):
        if item not in partitions:
            continue
        lines.append(f"- config_name: {ITEM_CONFIGS[item]}")
        if first:
            lines.append("  default: true")
            first = False
        lines.append("  data_files:")
        for split in sorted(partitions[item]):
            lines += [f"  - split: {split}", f"    path: {data_path(item, split)}"]
    if first:  # no rows at all: no config to name
        lines.pop()
    lines.append("---")
    return "\n".join(lines)


def _yaml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def agreement_lines(report: dict) -> list[str]:
    """The agreement table: each field of the report's `all` slice, its n, kappa, 95%
    interval and raw agreement, as the agreement report gives them."""
    lines = [
        "| field | n | kappa | 95% interval | raw agreement | weighting |",
        "|---|---|---|---|---|---|",
    ]
    for name, figures in report["slices"]["all"].items():
        if "kappa" not in figures:  # evidence overlap: a Jaccard index, not a kappa
            continue
        interval = figures.get("ci95")
        shown = "n/a" if not interval else f"[{_number(interval[0])}, {_number(interval[1])}]"
        lines.append(
            f"| {name} | {figures['n']} | {_number(figures['kappa'])} | {shown} | "
            f"{_number(figures['raw_agreement'])} | {figures.get('weighting') or ''} |"
        )
    overlap = report["slices"]["all"].get("evidence")
    if overlap is not None:
        lines.append("")
        lines.append(
            f"Evidence passages: mean Jaccard overlap {_number(overlap['mean_jaccard'])} over "
            f"{overlap['n']} pairs (and {overlap['neither']} where neither reviewer named one)."
        )
    return lines


def _guidelines(project: Project) -> str:
    """The guidelines version current when the release is made (each label set records its
    own: annotate.models.Assignment.guideline_version)."""
    if not project.guidelines_version:
        return "none written"
    changed = project.guidelines_changed_at
    return f"v{project.guidelines_version}" + (
        f" (since {changed.date().isoformat()})" if changed else ""
    )


def dataset_card(
    *,
    project: Project,
    name: str,
    options: dict,
    counts: ReleaseCounts,
    report: dict,
    row_count: int,
    sha256: str,
    schema_version: str,
    created_at: str,
    created_by: str,
) -> str:
    """The card of a release named `name`, from its counted rows and the project's agreement
    report (`report`, agreement_report's shape)."""
    partitions = counts.partition_dict()
    schema = project.schema
    lines = [
        _front_matter(project, name, partitions),
        "",
        f"# {project.name}: gold {name}",
        "",
        f"Gold release `{name}` of the claimdesk project `{project.slug}` (corpus "
        f"`{project.corpus_version}`): {row_count} rows, made {created_at} by {created_by}. "
        f"Rows in the `{schema_version}` format (docs/gold-export.md of claimdesk); the "
        f"JSONL file's SHA-256 is `{sha256}`.",
        "",
        f"Options: item `{options['item']}`, judge split `{options['split']}`, decided only "
        f"`{str(options['decided_only']).lower()}`.",
        "",
        "## Rows by source",
        "",
        "A row is *agreed* when both reviewers gave the same value for every field, "
        "*adjudicated* when a lead decided a field, *imported* when its gold came from "
        "elsewhere with no second reviewer, *pending* while a field waits for a lead (its gold "
        "is null).",
        "",
        "| rows | " + " | ".join(SOURCES) + " | total |",
        "|---|" + "---|" * (len(SOURCES) + 1),
    ]
    for item in ("claim", "answer"):
        found = counts.by_source.get(item, Counter())
        cells = " | ".join(str(found[s]) for s in SOURCES)
        lines.append(f"| {ITEM_CONFIGS[item]} | {cells} | {found.total()} |")
    lines += [
        "",
        "## Agreement",
        "",
        "Agreement of the two reviewers who labelled each item, field by field, over every "
        "doubly-labelled item of the project when the release was made (claimdesk's agreement "
        "report, slice `all`; 95% intervals by bootstrap over answers). Imported gold is in "
        "no agreement figure: "
        f"{report['gold_without_second_reviewer'].get('answers', 0)} answers and "
        f"{report['gold_without_second_reviewer'].get('claims', 0)} claims have gold "
        "imported with no second reviewer.",
        "",
        *agreement_lines(report),
        "",
        "## Label schema",
        "",
        f"- support: {schema.support} ({', '.join(schema.support_labels)}); support_binary "
        "derived (supported vs unsupported)",
        f"- claim fields: {', '.join(schema.claim_fields) or 'none'}",
        f"- answer fields: {', '.join(schema.answer_fields) or 'none'}",
        "",
        "## Provenance",
        "",
        f"- guideline version: {_guidelines(project)}",
        f"- calibration-sample design: {NOT_RECORDED}",
        "- reviewers are pseudonymous (R1, R2 ... in the order they joined the project)",
        "",
        "## Files",
        "",
    ]
    for item, splits in partitions.items():
        for split, n in splits.items():
            lines.append(f"- `{data_path(item, split)}`: {n} {item} rows")
    if not partitions:
        lines.append("- none: the release holds no rows")
    lines.append("")
    return "\n".join(lines)
