"""What the jobs framework tells the rest of the project, without knowing who listens: an app
that cares (annotate's webhooks) connects in its AppConfig.ready."""

from django.dispatch import Signal

# A job ended, succeeded or failed: sent with `job_id` by the one attempt that ended it, inside
# the transaction of a success (whose work commits with it) and after a failure's update.
job_finished = Signal()
