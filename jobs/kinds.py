"""The kinds of background work: what a job of each kind runs, and how its page reads it. A
registry the apps fill.

jobs knows how to accept work, run it in a worker, retry it and follow it; what a job DOES
belongs to the app whose data it writes. Each app registers its kinds in its `tasks` module,
where django-tasks looks for tasks: annotate/tasks.py (bundle, Ragas, label and gold imports,
the gold export), evaluation/tasks.py (judge-run imports). discover() imports every installed
app's `tasks` module (Django's autodiscover_modules, as the admin finds admin.py): the URLconf
calls it as it loads (config/urls.py), the system checks do (the worker command runs them as
it starts), and so does the look-up of a kind the registry does not hold -- not
django.setup(), so that a process that never touches a job (a command, a statistics probe)
loads none of the importers. The check (jobs.apps) says when a name of Job.Kind (the
database's vocabulary) has no registration, or the other way round. jobs imports neither app
(tests/test_architecture.py checks it).

Nothing here imports jobs.models: the model reads `is_import` from this registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import autodiscover_modules

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
    # The Content-Type of the file a job of this kind writes (its `output`), for its download.
    content_type: JobHook | None = None


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
_discovered = False
_discovering = threading.Lock()


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


def discover() -> None:
    """Import every installed app's `tasks` module, once: each registers its kinds."""
    global _discovered
    with _discovering:
        if not _discovered:
            autodiscover_modules("tasks")
            _discovered = True


def get(name: str) -> Kind:
    if name not in _KINDS:
        discover()
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


def download_type(job) -> str:
    """The Content-Type of the file the job wrote, as its kind says (binary when it does not)."""
    hook = get(job.kind).content_type
    return hook(job) if hook is not None else "application/octet-stream"


def check(names: Iterable[str]) -> list[checks.CheckMessage]:
    """Every name of the database's vocabulary (Job.Kind) registered, and nothing else: a
    kind nobody runs would wait for ever, one the field does not know could not be shown."""
    discover()
    names = {str(name) for name in names}
    missing = sorted(names - _KINDS.keys())
    unknown = sorted(_KINDS.keys() - names)
    found = []
    if missing:
        found.append(
            checks.Error(
                f"Job kinds that no app's tasks module registers: {', '.join(missing)}.",
                hint="Register each with jobs.kinds.register in its app's tasks.py.",
                id="jobs.E001",
            )
        )
    if unknown:
        found.append(
            checks.Error(
                f"Job kinds registered but not in jobs.models.Job.Kind: {', '.join(unknown)}.",
                hint="Add the name to Job.Kind (the database's vocabulary of kinds).",
                id="jobs.E002",
            )
        )
    return found
