from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Labelling"

    def ready(self):
        from annotate.common import lookups  # noqa: F401  (registers `__any`)
