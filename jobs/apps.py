from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from jobs import kinds


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        # Each app's tasks module registers the kinds of job it runs (jobs.kinds): imported
        # here, in every process, as the admin imports each app's admin.py.
        autodiscover_modules("tasks")
        kinds.check(self.get_model("Job").Kind.values)
