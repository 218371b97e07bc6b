from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Labelling"

    def ready(self):
        from annotate.common import lookups  # noqa: F401  (registers `__any`)
        from annotate.webhooks import events
        from jobs.signals import job_finished

        job_finished.connect(events.job_finished, dispatch_uid="annotate.webhooks")
