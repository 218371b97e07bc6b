"""Projects of any size for tests that pin how pages grow: a bundle written on the fly, two
reviewers' labels (about one claim in six disputed) and a model judge's run, all through the
ordinary services."""

from __future__ import annotations

import json

from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.schema import LabelSchema
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun

SUPPORT = ("supported", "contradicted", "insufficient_evidence")
CLAIMS = 3
PASSAGES = 20


def bundle(answers: int) -> list[str]:
    lines = [{"type": "bundle", "corpus_version": "scale-v1", "name": f"{answers} answers"}]
    lines += [{"type": "variant", "name": v, "settings": {"k": 5}} for v in ("baseline", "hybrid")]
    lines += [
        {"type": "passage", "passage_id": f"p{i}", "text": f"Passage {i} states fact {i}."}
        for i in range(PASSAGES)
    ]
    for c in range(answers // 2):
        evidence = f"p{c % PASSAGES}"
        lines.append(
            {
                "type": "case",
                "case_id": f"case-{c}",
                "question": f"What does the course say about fact {c}?",
                "answerable": c % 5 != 0,
                "adversarial": c % 7 == 0,
                "required_facts": [f"fact {c}"],
                "evidence": [{"passage_id": evidence, "quote": f"fact {c % PASSAGES}"}]
                if c % 5
                else [],
            }
        )
        lines.append(
            {"type": "judgment", "case_id": f"case-{c}", "passage_id": evidence, "grade": 3}
        )
        for v, variant in enumerate(("baseline", "hybrid")):
            sentences = [f"Fact {c} holds in part {n}." for n in range(CLAIMS)]
            text, claims, position = "", [], 0
            for sentence in sentences:
                claims.append(
                    {"text": sentence, "start": position, "end": position + len(sentence)}
                )
                text += sentence + " "
                position = len(text)
            ranking = [f"p{(c + v + r) % PASSAGES}" for r in range(5)]
            lines.append(
                {
                    "type": "answer",
                    "answer_id": f"case-{c}/{variant}",
                    "case_id": f"case-{c}",
                    "variant": variant,
                    "text": text.rstrip(),
                    "elapsed_ms": 800 + (c * 37 + v * 411) % 1500,
                    "retrieved": [
                        {"passage_id": pid, "rank": r + 1, "in_prompt": r < 3}
                        for r, pid in enumerate(ranking)
                    ],
                    "claims": claims,
                }
            )
    return [json.dumps(line) for line in lines]


def labels(reviewer: str, answers: int, *, first: bool) -> list[str]:
    out = []
    for c in range(answers // 2):
        for v, variant in enumerate(("baseline", "hybrid")):
            claims = []
            for n in range(CLAIMS):
                support = SUPPORT[(c + n) % 3] if (c + n) % 4 else "supported"
                if not first and (c * CLAIMS + n + v) % 6 == 0:  # bob departs now and then
                    support = SUPPORT[(SUPPORT.index(support) + 1) % 3]
                claims.append({"index": n, "support": support})
            out.append(
                json.dumps(
                    {
                        "answer_id": f"case-{c}/{variant}",
                        "reviewer": reviewer,
                        "relevance": (c + v) % 3,
                        "claims": claims,
                    }
                )
            )
    return out


def judge_run(answers: int) -> list[str]:
    lines = [json.dumps({"type": "run", "judge": "scale-judge", "model": "x/judge", "prompt": "p"})]
    for c in range(answers // 2):
        for variant in ("baseline", "hybrid"):
            for n in range(CLAIMS):
                label = None if (c + n) % 11 == 0 else SUPPORT[(c * 2 + n) % 3]
                lines.append(
                    json.dumps(
                        {
                            "type": "verdict",
                            "answer_id": f"case-{c}/{variant}",
                            "claim_index": n,
                            "raw": json.dumps({"label": label}),
                            "label": label,
                        }
                    )
                )
    return lines


def build_scaled_project(slug: str, answers: int, *, lead) -> tuple[Project, JudgeRun]:
    """A project of ``answers`` answers (two variants, three claims each), labelled by alice
    and bob (who must exist), led by ``lead``, with a judge run."""
    project = import_bundle(lines=bundle(answers), project_slug=slug).project
    set_label_schema(project=project, schema=LabelSchema("three_way", (), ("relevance",)))
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    import_labels(lines=labels("alice", answers, first=True), project=project)
    import_labels(lines=labels("bob", answers, first=False), project=project)
    run = import_judge_run(lines=judge_run(answers), project=project).run
    return project, run
