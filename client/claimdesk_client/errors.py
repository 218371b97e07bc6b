"""What the client raises: one exception per kind of answer a script handles differently.

Every class derives from ClaimdeskError, which carries the HTTP status and the parsed body, so
`except ClaimdeskError` catches all of them. A 400 keeps the API's field paths
(`Refused.errors`, `{"claims.1.evidence_quote": ["..."]}`); an import refused line by line,
at once or in its job, keeps every line (`LineErrors.lines`)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

# How many problems an exception's message spells out; all of them are in its attributes.
SHOWN = 20


class ClaimdeskError(Exception):
    """The API refused a request or could not do it. `status` is the HTTP status (None when a
    background job failed), `body` the answer as parsed JSON (or its text)."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class AuthError(ClaimdeskError):
    """401 (no valid token: expired, revoked, mistyped), 403 (your role in the project does
    not allow it) or 429 (too many wrong tokens from this address: `retry_after` seconds)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class NotFound(ClaimdeskError):
    """404: no such object, or a project you have no role in (the API does not say which)."""


class Conflict(ClaimdeskError):
    """409: the current state refuses it (labelling already open, a task submitted, a label
    saved since the version you sent). `body` may carry the current label or version."""


class Unavailable(ClaimdeskError):
    """503: the database or the task queue did not answer; nothing was queued. Sending the
    request again after `retry_after` seconds is safe (Client(retries=...) does it)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class Refused(ClaimdeskError):
    """400: invalid input. `errors` maps each field path to its messages, as the API wrote
    them: `{"username": [...]}`, `{"decisions.0.field": [...]}`."""

    def __init__(self, message: str, *, errors: dict[str, list[str]], **kwargs):
        super().__init__(message, **kwargs)
        self.errors = errors


class LineError(NamedTuple):
    """One problem of a refused file: `line` (a CSV's `row`, by `unit`), None for a problem
    of the whole file ("The file is empty.")."""

    line: int | None
    message: str
    unit: str = "line"

    def __str__(self) -> str:
        return f"{self.unit} {self.line}: {self.message}" if self.line is not None else self.message


_NUMBERED = re.compile(r"(line|row) (\d+): (.*)\Z", re.DOTALL)


def parse_line_error(text: str) -> LineError:
    """'line 3: unknown answer_id' as LineError(3, 'unknown answer_id')."""
    match = _NUMBERED.match(text)
    if match is None:
        return LineError(None, text)
    return LineError(int(match.group(2)), match.group(3), match.group(1))


class LineErrors(Refused):
    """A file refused whole, nothing written: `lines` holds every problem (LineError, in the
    file's order), `summary` the same grouped by message. From a 400 (an empty file, a judge
    run imported in the request) or from a failed import job (`job`)."""

    def __init__(
        self,
        lines: list[LineError],
        *,
        summary: list[str] = (),
        job: dict | None = None,
        status: int | None = None,
        body: Any = None,
    ):
        shown = [str(problem) for problem in lines[:SHOWN]]
        if len(lines) > SHOWN:
            shown.append(f"... and {len(lines) - SHOWN} more (see .lines)")
        where = f"job {job['id']}" if job else "the file"
        message = f"{where} was refused, nothing was written: {len(lines)} problem(s)\n"
        super().__init__(
            message + "\n".join(shown),
            errors={"errors": [str(problem) for problem in lines]},
            status=status,
            body=body,
        )
        self.lines = lines
        self.summary = list(summary)
        self.job = job


class JobFailed(ClaimdeskError):
    """A background job ended without a result and not for its file's lines: `failure` says
    why in words. A replace that would delete data fails so, listing it in `deletions`
    (confirm with `Client.retry(job, confirm_deletions=True)`); a job that lost its worker,
    or that no worker took, is `job["retryable"]`: `Client.retry(job)` sends it again."""

    def __init__(self, message: str, *, job: dict):
        super().__init__(message, body=job)
        self.job = job
        self.failure = job.get("failure", "")
        self.deletions = (job.get("result") or {}).get("deletions")


def from_job(job: dict) -> ClaimdeskError:
    """The exception a failed job stands for."""
    if job.get("errors"):
        lines = [parse_line_error(text) for text in job["errors"]]
        return LineErrors(lines, summary=job.get("summary") or [], job=job, body=job)
    return JobFailed(f"job {job['id']} failed: {job.get('failure') or 'no reason given'}", job=job)


def field_errors(body: Any) -> dict[str, list[str]]:
    """A 400's body as field path -> messages, whatever its shape ({"detail": "..."} too)."""
    if not isinstance(body, dict):
        return {"detail": [str(body)]}
    out: dict[str, list[str]] = {}
    for key, value in body.items():
        out[str(key)] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return out


def is_line_errors(body: Any) -> bool:
    """An import refused by line answers {"errors": [...], "summary": [...]}; a malformed
    request has field paths instead."""
    return (
        isinstance(body, dict)
        and isinstance(body.get("errors"), list)
        and set(body) <= {"errors", "summary"}
    )


def from_response(status: int, body: Any, *, what: str, retry_after: float | None):
    """The exception for an HTTP error answer to `what` ("GET /api/v1/...")."""
    detail = body.get("detail") if isinstance(body, dict) else None
    text = detail if isinstance(detail, str) else str(body)
    if status == 400:
        if is_line_errors(body):
            lines = [parse_line_error(str(text)) for text in body["errors"]]
            return LineErrors(lines, summary=body.get("summary") or [], status=status, body=body)
        errors = field_errors(body)
        listed = "\n".join(f"{path}: {' '.join(messages)}" for path, messages in errors.items())
        return Refused(f"{what}: 400 refused\n{listed}", errors=errors, status=status, body=body)
    message = f"{what}: {status} {text}"
    if status in (401, 403, 429):
        return AuthError(message, retry_after=retry_after, status=status, body=body)
    if status == 404:
        return NotFound(message, status=status, body=body)
    if status == 409:
        return Conflict(message, status=status, body=body)
    if status == 503:
        return Unavailable(message, retry_after=retry_after, status=status, body=body)
    return ClaimdeskError(message, status=status, body=body)
