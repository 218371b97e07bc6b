"""What a lead reads to adjudicate: one doubly-labelled answer as the adjudication screen shows
it (every reviewer's values of each field side by side, as reviewer A, B, C … in the order they
submitted; the gold so far, the passages; never the variant, never a reviewer's name), its
audit trail, and the words the screen uses for fields and values."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, Q

from annotate.gold import pairs
from annotate.gold.pairs import (
    ADJUDICATED,
    AGREED,
    DERIVED,
    PENDING,
    claim_fields,
    pairs_for_project,
)
from annotate.labelling.selectors import ClaimRow, PassageRow, Segment, segments
from annotate.models import (
    Abstention,
    AdjudicationLock,
    Answer,
    Assignment,
    Citation,
    Claim,
    Decision,
    Flag,
    Project,
    RetrievedPassage,
    Severity,
    Support,
    failure_label_words,
)

FIELD_CHOICES = {
    "support": [c.value for c in Support],
    "severity": [c.value for c in Severity],
    "requires_evidence": [True, False],
    "relevance": [0, 1, 2],
    "abstention": [c.value for c in Abstention],
}


FIELD_LABELS = {
    "requires_evidence": "needs evidence",
    "failure_labels": "failure labels",
}


def field_word(name: str) -> str:
    """A label field as people say it: requires_evidence → needs evidence."""
    return FIELD_LABELS.get(name, name.replace("_", " "))


def show_choice(value) -> str:
    """A vocabulary value for people: insufficient_evidence → insufficient evidence."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).replace("_", " ")


def show_value(field_name: str, value) -> str:
    """A label value as a lead reads it on the adjudication screen (ids stay as they are)."""
    if value is None or value == "":
        return "—"
    if field_name == "citations":
        return ", ".join(f"{k}: {show_choice(v)}" for k, v in sorted(value.items())) or "—"
    if field_name == "evidence":
        ids = ", ".join(value.get("evidence_ids") or []) or "no passage"
        quote = value.get("evidence_quote") or ""
        return f"{ids} · “{quote}”" if quote else ids
    if field_name == "failure_labels":
        return ", ".join(map(failure_label_words, value)) or "none"
    return show_choice(value)


def side_letter(index: int) -> str:
    """A label set's name on the screen, by its place in submission order: A, B, C …"""
    return chr(ord("A") + index) if index < 26 else f"R{index + 1}"


def side_key(index: int) -> str:
    """A label set's choice as the form posts it: a, b, c … (the keys that choose it)."""
    return side_letter(index).lower()


@dataclass
class FieldRow:
    item: str  # claim ordinal, or "answer"
    name: str
    values: list  # each label set's value, in submission order (reviewer A, B, C …)
    gold: object
    source: str
    rationale: str
    differs: bool
    vocabulary: tuple = ()  # the values 'other' offers, when not the field's usual ones

    @property
    def a(self) -> object:
        return self.values[0]

    @property
    def b(self) -> object:
        return self.values[1]

    @property
    def others(self) -> list:
        """The values of the label sets after the first two (reviewer C, D …)."""
        return self.values[2:]

    def value_of(self, choice: str) -> tuple[bool, object]:
        """(whether `choice` names a label set, its value): 'a' is reviewer A's."""
        for index, value in enumerate(self.values):
            if side_key(index) == choice:
                return True, value
        return False, None

    @property
    def key(self) -> str:
        return f"{self.item}-{self.name}"

    @property
    def default_choice(self) -> str:
        return "" if self.source == PENDING else "keep"

    @property
    def shown(self) -> dict:
        return {
            "a": show_value(self.name, self.a),
            "b": show_value(self.name, self.b),
            "gold": show_value(self.name, self.gold),
        }

    @property
    def sides(self) -> list[tuple[str, str, str]]:
        """(letter, choice key, value as shown) of every label set, for the screen's columns."""
        return [
            (side_letter(i), side_key(i), show_value(self.name, value))
            for i, value in enumerate(self.values)
        ]

    @property
    def label(self) -> str:
        return field_word(self.name)

    @property
    def choices(self) -> list[tuple[object, str]]:
        """(value as posted, as shown) for the 'other' select."""
        values = self.vocabulary or FIELD_CHOICES.get(self.name, [])
        return [(value, show_choice(value)) for value in values]


def split_fields(rows: list[FieldRow]) -> tuple[list[FieldRow], list[FieldRow]]:
    """(fields a lead must look at, fields already agreed and shown collapsed)."""
    open_ = [r for r in rows if r.differs or r.source == ADJUDICATED]
    return open_, [r for r in rows if r not in open_]


class _Notes:
    """Each label set's note (`notes`, in submission order), as the screen names them: A and
    B, and lettered for every reviewer."""

    notes: list[str]

    @property
    def note_a(self) -> str:
        return self.notes[0]

    @property
    def note_b(self) -> str:
        return self.notes[1]

    @property
    def lettered_notes(self) -> list[tuple[str, str]]:
        return _lettered(self.notes)


@dataclass
class ClaimAdjudication(_Notes):
    claim: Claim
    citations: list[Citation]
    fields: list[FieldRow]
    quotes: list[str]  # each label set's evidence quote, in submission order
    notes: list[str]  # each label set's note
    # Both reviewers said unsupported, in different words: the binary value is agreed and
    # only the subtype waits.
    binary_agreed: str | None = None
    rationale: str = ""  # of the claim's latest decision, to start the rationale box with

    @property
    def split(self):
        return split_fields(self.fields)

    @property
    def quote_a(self) -> str:
        return self.quotes[0]

    @property
    def quote_b(self) -> str:
        return self.quotes[1]

    @property
    def key(self) -> str:
        """The claim's name in the form: its 0-based index, as FieldRow.item."""
        return str(self.claim.ordinal)


@dataclass
class AdjudicationScreen(_Notes):
    answer: Answer
    question: str
    segments: list[Segment]
    claims: list[ClaimAdjudication]
    answer_fields: list[FieldRow]
    passages: list[PassageRow]
    version: int
    pending: int
    history: list
    notes: list[str] = field(default_factory=lambda: ["", ""])  # each label set's, on the answer
    audit: list = field(default_factory=list)
    rationale: str = ""  # of the latest decision on the whole answer

    key = "answer"  # the answer's name in the form, as FieldRow.item

    @property
    def letters(self) -> list[str]:
        """The reviewers' columns: A, B, and C … when more than two label sets."""
        return [side_letter(i) for i in range(len(self.notes))]

    @property
    def answer_split(self):
        return split_fields(self.answer_fields)

    @property
    def disagreements(self) -> list[str]:
        """What the reviewers disagree on and nobody has decided, for the page's heading:
        'claim 2 support (supported vs contradicted)', 'relevance (1 vs 0)'."""
        rows = [(f"claim {c.claim.ordinal + 1} ", f) for c in self.claims for f in c.fields]
        rows += [("", f) for f in self.answer_fields]
        return [
            f"{where}{row.label}"
            + (
                " (" + " vs ".join(shown for _, _, shown in row.sides) + ")"
                if row.name in FIELD_CHOICES
                else ""
            )
            for where, row in rows
            if row.differs and row.source == PENDING
        ]

    @property
    def quote_marks(self) -> list[tuple[str, str]]:
        """Every reviewer's quotes, to mark in the passages as A, B, C …"""
        return [
            (c.quotes[i], f"quote-{side_key(i)}")
            for i in range(len(self.notes))
            for c in self.claims
            if i < len(c.quotes) and c.quotes[i]
        ]


def _lettered(notes: list[str]) -> list[tuple[str, str]]:
    """(letter, note) of each label set, when any has a note; else nothing to show."""
    if not any(notes):
        return []
    return [(side_letter(i), note) for i, note in enumerate(notes)]


def _side_values(labels: dict, names) -> dict:
    values = {name: labels.get(name) for name in names}
    if "evidence" in names:
        values["evidence"] = {
            "evidence_ids": sorted(labels.get("evidence_ids") or []),
            "evidence_quote": labels.get("evidence_quote") or "",
        }
    return values


def answer_by_task_number(project: Project, task_number: int) -> Answer | None:
    """A lead's way to an answer: by the task number within their project, variant unloaded."""
    return Answer.objects.filter(project=project, task_number=task_number).only("pk").first()


def adjudication_screen(project: Project, task_number: int) -> AdjudicationScreen | None:
    """One doubly-labelled answer for a lead to adjudicate, variant never loaded."""
    answer = (
        Answer.objects.filter(project=project, task_number=task_number)
        .select_related("case")
        .first()
    )
    if answer is None:
        return None
    answer_pairs, claim_pairs = pairs_for_project(project, answer_ids=[answer.pk])
    if not answer_pairs:
        return None
    claims = {
        c.pk: c
        for c in Claim.objects.filter(answer=answer).prefetch_related(
            Prefetch("citations", queryset=Citation.objects.select_related("passage"))
        )
    }

    schema = project.schema
    # support_binary follows the support decision: a lead decides support, never it alone.
    claim_names = [f for f in claim_fields(schema) if f not in DERIVED]
    answer_names = list(pairs.answer_fields(schema))
    vocabulary = {"support": schema.support_labels}

    def rows(pair, item, names):
        sides = [_side_values(labels, names) for _, labels in pair.sides]
        return [
            FieldRow(
                item,
                name,
                [side[name] for side in sides],
                pair.gold.get(name),
                pair.source.get(name),
                pair.rationale.get(name, ""),
                pair.differs(name),
                vocabulary.get(name, ()),
            )
            for name in names
        ]

    claim_rows = [
        ClaimAdjudication(
            claim=claims[p.claim_id],
            citations=list(claims[p.claim_id].citations.all()),
            fields=rows(p, str(p.ordinal), claim_names),
            quotes=[labels.get("evidence_quote") or "" for _, labels in p.sides],
            notes=[labels.get("note") or "" for _, labels in p.sides],
            binary_agreed=(
                p.gold.get("support_binary")
                if p.source.get("support") == PENDING and p.source.get("support_binary") == AGREED
                else None
            ),
        )
        for p in claim_pairs
    ]
    retrieved = RetrievedPassage.objects.filter(answer=answer).select_related("passage")
    passages = [
        PassageRow(r.passage, r.rank, r.in_prompt, True) for r in retrieved.order_by("rank")
    ]
    shown = {p.passage.passage_id for p in passages}
    for claim in claims.values():
        for citation in claim.citations.all():
            if citation.passage is not None and citation.passage.passage_id not in shown:
                passages.append(PassageRow(citation.passage, None, False, False))
                shown.add(citation.passage.passage_id)
    lock = AdjudicationLock.objects.filter(answer=answer).first()
    history = list(
        Decision.objects.filter(answer=answer)
        .select_related("decided_by", "claim")
        .order_by("-decided_at", "-pk")[:50]
    )
    # Each item's latest rationale (the history is newest first) starts its rationale box.
    latest_rationale: dict[int | None, str] = {}
    for decision in history:
        latest_rationale.setdefault(decision.claim_id, decision.rationale)
    for row in claim_rows:
        row.rationale = latest_rationale.get(row.claim.pk, "")
    label_rows = [ClaimRow(c, None, list(c.citations.all())) for c in claims.values()]
    answer_pair = answer_pairs[0]
    answer_fields = rows(answer_pair, "answer", answer_names)
    all_fields = [f for c in claim_rows for f in c.fields] + answer_fields
    return AdjudicationScreen(
        answer=answer,
        question=answer.case.question,
        segments=segments(answer.text, label_rows),
        claims=sorted(claim_rows, key=lambda c: c.claim.ordinal),
        answer_fields=answer_fields,
        passages=passages,
        version=lock.version if lock else 0,
        pending=sum(f.source == PENDING for f in all_fields),
        history=history,
        notes=[labels.get("note") or "" for _, labels in answer_pair.sides],
        audit=task_audit(
            answer, {reviewer: side_letter(i) for i, (reviewer, _) in enumerate(answer_pair.sides)}
        ),
        rationale=latest_rationale.get(None, ""),
    )


@dataclass(frozen=True)
class AuditEvent:
    at: object  # datetime
    who: str  # "reviewer A", or the acting user when it was somebody else
    what: str


def task_audit(answer: Answer, sides: dict[int, str]) -> list[AuditEvent]:
    """Who did what to this task and when, for its lead: the assignments' status changes
    (taken, submitted, reopened, released; an imported label set has no acting user), the
    claim boundary edits, and the in-place data corrections. Reviewers are named by side (A,
    B, C …) as on the rest of the screen; the decisions have their own list. Three queries."""
    events: list[AuditEvent] = []
    previous: dict[int, str] = {}
    rows = (
        Assignment.history.filter(answer_id=answer.pk)
        .select_related("history_user")
        .order_by("history_date", "history_id")
    )
    for row in rows:
        side = sides.get(row.reviewer_id)
        reviewer = f"reviewer {side}" if side else "another reviewer"
        actor = row.history_user
        who = reviewer if actor is None or actor.pk == row.reviewer_id else actor.get_username()
        was = previous.get(row.id)
        previous[row.id] = row.status
        if row.history_type == "-":
            events.append(AuditEvent(row.history_date, who, f"deleted the task of {reviewer}"))
        elif was == row.status:
            continue
        elif row.status == Assignment.Status.SUBMITTED:
            how = "labels imported" if was is None and actor is None else "submitted"
            events.append(AuditEvent(row.history_date, who, f"{how} (revision {row.revision})"))
        elif row.status == Assignment.Status.IN_PROGRESS:
            events.append(
                AuditEvent(row.history_date, who, "took the task" if was is None else "reopened")
            )
        elif row.status == Assignment.Status.RELEASED:
            events.append(AuditEvent(row.history_date, who, f"gave it back: {row.release_reason}"))
    for row in (
        Claim.history.filter(answer_id=answer.pk)
        .exclude(history_type="+")
        .select_related("history_user")
        .order_by("history_date", "history_id")
    ):
        actor = row.history_user.get_username() if row.history_user else "an import"
        verb = "removed" if row.history_type == "-" else "changed"
        events.append(
            AuditEvent(row.history_date, actor, f"{verb} claim {row.ordinal + 1}'s boundaries")
        )
    for correction in answer.corrections.all():
        fields = ", ".join(correction.changes)
        events.append(AuditEvent(correction.corrected_at, "an import", f"corrected {fields}"))
    return sorted(events, key=lambda e: e.at)


def doubly_labelled(project: Project) -> bool:
    """Whether any answer has two submitted label sets, the first gold there can be."""
    return (
        Answer.objects.filter(project=project)
        .annotate(
            submitted=Count(
                "assignments",
                filter=Q(
                    assignments__status=Assignment.Status.SUBMITTED,
                    assignments__is_check=False,
                ),
            )
        )
        .filter(submitted__gte=2)
        .exists()
    )


def flags(project: Project, *, resolved: bool | None = False):
    """The reviewers' flags, oldest first, with what a lead's list shows of each (task number,
    question, who flagged, who resolved) joined in: one query for a page of them. `resolved`
    False: the open ones (by the open-flag index); True: the resolved ones; None: all."""
    found = Flag.objects.filter(project=project)
    if resolved is not None:
        found = found.filter(resolved_at__isnull=not resolved)
    return found.select_related("answer__case", "reviewer", "resolved_by").order_by(
        "created_at", "pk"
    )


def decided_of(project: Project, pending: set[int]) -> tuple[int, int]:
    """(decided, all): the answers a lead has decided every disagreement of, out of those
    with a disagreement at all (decided, or still `pending`, the queue's answers, from the
    pair summary): the queue's "5 of 19 decided". One query, of the decisions' answers."""
    decided = set(
        Decision.objects.filter(answer__project=project)
        .values_list("answer_id", flat=True)
        .distinct()
        .order_by()
    )
    done = len(decided - pending)
    return done, done + len(pending)
