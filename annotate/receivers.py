"""annotate's receivers of other apps' signals, connected once the app is ready (annotate.apps
discovers this module): jobs says that a job ended, and annotate's webhooks tell the team."""

from __future__ import annotations

from annotate.webhooks import events
from jobs.signals import job_finished

job_finished.connect(events.job_finished, dispatch_uid="annotate.webhooks")
