"""The kinds of background work: what a job of each kind runs, and how its page reads it. A
registry the apps fill.

jobs knows how to accept work, run it in a worker, retry it and follow it; what a job DOES
belongs to the app whose data it writes. Each app registers its kinds in its `tasks` module,
where django-tasks looks for tasks: annotate/tasks.py (bundle, Ragas, label and gold imports,
the gold export), evaluation/tasks.py (judge-run imports). jobs.apps imports every installed
app's `tasks` module at start-up, as the admin finds admin.py, and checks that each name of
Job.Kind (the database's vocabulary) is registered once. jobs imports neither app
(tests/test_architecture.py checks it).

Nothing here imports jobs.models: the model reads `is_import` from this registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# Signatures, as the registered functions are called (a Job, a jobs.progress.Progress, a
# request): `run(job, progress)` does the work and calls jobs.services.finish inside its
# transaction; the page hooks take the job.
Work = Callable[[Any, Any], None]
JobHook = Callable[[Any], Any]


@dataclass(frozen=True)
class Kind:
    name: str
    run: Work
    # Reads an upload line by line (a progress of lines read, then rows written), rather
    # than writing a file (rows written of rows_total).
    is_import: bool = True
    # Where the job's page sends a person once the import has succeeded.
    done_url: JobHook | None = None
    # The form to upload a corrected file on (or to go back to).
    again_url: JobHook | None = None
    # announce(request, job): the finished job's result, as a message to the person.
    announce: Callable[[Any, Any], None] | None = None
    # A refused file's problems as the pages show them (an object with `errors` and
    # `grouped()`), or None.
    problems: JobHook | None = None


class Refused(Exception):
    """The work refused what it was given: the job fails with `failure` (in words) and
    writes nothing. `errors` are the file's problems by line (objects with `line`,
    `message` and `unit`), `result` what the page shows beside them; `keep_file` keeps the
    upload for a retry (a replace that waits for its deletions to be confirmed)."""

    def __init__(
        self,
        failure: str,
        *,
        errors: Sequence = (),
        result: dict | None = None,
        keep_file: bool = False,
    ):
        super().__init__(failure)
        self.failure = failure
        self.errors = errors
        self.result = result
        self.drop_file = not keep_file


_KINDS: dict[str, Kind] = {}


def register(name: str, *, run: Work, **hooks) -> Kind:
    """Declare what a job of kind `name` runs (and, in `hooks`, Kind's other fields). Called
    once per kind, by the app's tasks module as it is imported."""
    kind = Kind(name=str(name), run=run, **hooks)
    known = _KINDS.get(kind.name)
    if known is not None and known.run.__module__ != run.__module__:
        raise ImproperlyConfigured(
            f"The job kind {kind.name!r} is registered twice: by {known.run.__module__} "
            f"and {run.__module__}."
        )
    _KINDS[kind.name] = kind
    return kind


def get(name: str) -> Kind:
    try:
        return _KINDS[name]
    except KeyError:
        raise LookupError(
            f"No app registered the job kind {name!r}: its app's tasks module registers it "
            "(jobs.kinds.register), and the app must be in INSTALLED_APPS."
        ) from None


def problems(job):
    """A refused file's problems, as the upload pages show them, or None."""
    hook = get(job.kind).problems
    return hook(job) if hook is not None and job.errors else None


def check(names: Iterable[str]) -> None:
    """Every name of the database's vocabulary (Job.Kind) registered, and nothing else: a
    kind nobody runs would wait for ever, one the field does not know could not be shown."""
    names = {str(name) for name in names}
    missing = sorted(names - _KINDS.keys())
    unknown = sorted(_KINDS.keys() - names)
    if missing or unknown:
        raise ImproperlyConfigured(
            f"Job kinds not registered by any app's tasks module: {missing}; registered "
            f"but not in jobs.models.Job.Kind: {unknown}."
        )
