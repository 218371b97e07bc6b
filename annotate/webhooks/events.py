"""The events a project sends, and their payloads (docs/webhooks.md).

Each function here is the one-line hook its domain code calls inside the transaction that
makes the event. Payloads are small, ids and counts: a task is named by its task number (as
the API names it), never by its answer id, its variant or anyone's labels, since a payload
leaves claimdesk for systems whose readers it cannot check. Nothing is read to build one
unless an endpoint listens.

- task.submitted: a reviewer submitted a task (annotate.labelling.services.submit_labels)
- dispute.decided: a lead saved decisions on a task (annotate.adjudication.services.adjudicate)
- job.finished: an import or export job ended, done or failed (jobs.signals.job_finished)
- release.made: a gold release was frozen (to be called by the release service, see
  release_made)
"""

from __future__ import annotations

from annotate.models import Answer, Assignment, WebhookEndpoint
from annotate.webhooks.services import emit
from jobs.models import Job

Event = WebhookEndpoint.Event


def task_submitted(assignment: Assignment, *, source: str) -> None:
    """`data`: task (its number), revision (1 for a first submission, more after a reopen),
    source (browser, api)."""
    emit(
        project=assignment.project_id,
        event=Event.TASK_SUBMITTED,
        data=lambda: {
            "task": assignment.answer.task_number,
            "revision": assignment.revision,
            "source": source,
        },
    )


def dispute_decided(*, answer: Answer, version: int, decisions: list) -> None:
    """`data`: task, decisions (how many fields this save decided), fields (their names),
    version (the adjudication's version after the save). Nothing when nothing was decided."""
    if not decisions:
        return
    emit(
        project=answer.project_id,
        event=Event.DISPUTE_DECIDED,
        data=lambda: {
            "task": answer.task_number,
            "decisions": len(decisions),
            "fields": sorted({d.field for d in decisions}),
            "version": version,
        },
    )


def job_finished(sender, *, job_id, **kwargs) -> None:
    """Receives jobs.signals.job_finished. `data`: job (its id, as /api/v1/jobs/{id}/ takes
    it), kind, status (succeeded, failed). A job of no project yet (a new project's import
    that failed) has nobody to tell."""
    job = Job.objects.filter(pk=job_id).values("project_id", "kind", "status").first()
    if job is None or job["project_id"] is None:
        return
    emit(
        project=job["project_id"],
        event=Event.JOB_FINISHED,
        data={"job": str(job_id), "kind": job["kind"], "status": job["status"]},
    )


def release_made(*, project, name: str, rows: int, sha256: str) -> None:
    """`data`: release (its name), rows, sha256. For the gold-release service to call
    in the transaction that freezes a release."""
    emit(
        project=project,
        event=Event.RELEASE_MADE,
        data={"release": name, "rows": rows, "sha256": sha256},
    )
