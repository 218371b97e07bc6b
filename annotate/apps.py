from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from annotate.common import lookups  # noqa: F401  (registers `__any` and `__among` as imported)


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Labelling"

    def ready(self):
        # Every app's report kinds (annotate.common.computed), and annotate's receivers of
        # other apps' signals (annotate.receivers), once the models are loaded.
        autodiscover_modules("report_kinds", "receivers")
