from django.apps import AppConfig

from annotate.common import lookups  # noqa: F401  (registers `__any` and `__among` as imported)


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Labelling"
