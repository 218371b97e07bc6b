from django.apps import AppConfig, apps
from django.core import checks

from jobs import kinds


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        checks.register(check_kinds)


def check_kinds(app_configs=None, **kwargs):
    """Each name of Job.Kind registered by an app's tasks module (jobs.kinds), and no other."""
    return kinds.check(apps.get_model("jobs", "Job").Kind.values)
