"""Writes. Every function here is a verb with keyword-only arguments, atomic, and the one place
its rule is enforced: the pages, the API and the management commands all call these.

One module per capability (the importers are in annotate.imports, adjudication in
annotate.adjudication):
- queue: the next task, skipping (next_task, release_task, release_abandoned)
- labelling: drafts, validation, submission, reopening (save_claim_label, submit_labels …)
- preferences: a person's own settings (set_preferences)
"""

from annotate.services.labelling import (
    IDLE_CAP_SECONDS,
    LabelErrors,
    StaleDraft,
    adjudication_started,
    can_reopen,
    check_answer_label,
    check_claim_label,
    check_row_label,
    default_citation_verdicts,
    label_snapshot,
    reopen_task,
    save_answer_label,
    save_claim_label,
    screen_errors,
    shown_passages,
    submit_labels,
    validate_submission,
)
from annotate.services.preferences import set_preferences
from annotate.services.queue import next_task, release_abandoned, release_task

__all__ = [
    "IDLE_CAP_SECONDS",
    "LabelErrors",
    "StaleDraft",
    "adjudication_started",
    "can_reopen",
    "check_answer_label",
    "check_claim_label",
    "check_row_label",
    "default_citation_verdicts",
    "label_snapshot",
    "next_task",
    "release_abandoned",
    "release_task",
    "reopen_task",
    "save_answer_label",
    "save_claim_label",
    "screen_errors",
    "set_preferences",
    "shown_passages",
    "submit_labels",
    "validate_submission",
]
