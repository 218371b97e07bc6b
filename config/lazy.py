"""Views whose module is imported on their first request, not when the URLconf loads.

The statistics pages import numpy, scipy and scikit-learn (about 150 MB and a second and a
half); a web worker that only serves labelling pages, and every management command (the
system checks load the URLconf), should not pay for them. `lazy("evaluation.views.report.report")`
stands in for the view and imports it when a request, the CSRF middleware or drf-spectacular
first asks it for anything.
"""

from __future__ import annotations

from functools import cached_property
from importlib import import_module


class LazyView:
    def __init__(self, dotted: str, *, as_view: bool = False):
        self.dotted = dotted
        self.as_view = as_view

    @cached_property
    def view(self):
        module, _, name = self.dotted.rpartition(".")
        found = getattr(import_module(module), name)
        return found.as_view() if self.as_view else found

    def __call__(self, request, *args, **kwargs):
        return self.view(request, *args, **kwargs)

    def __getattr__(self, name):
        # Attributes the view carries (csrf_exempt, cls, initkwargs …) come from the real one.
        # reverse() asks every pattern for `view_class` (to name it by dotted path): that must
        # not import anything, so the lazy view has none.
        if name in ("dotted", "as_view", "view", "view_class") or name.startswith("__"):
            raise AttributeError(name)
        # drf-spectacular asks every pattern of the site for `cls` to find the API's views; a
        # function view (lazy(), never a DRF one) has none, and answering must not import the
        # statistics pages' modules: the schema's worker went to 200 MB for it.
        if name == "cls" and not self.as_view:
            raise AttributeError(name)
        return getattr(self.view, name)

    def __repr__(self) -> str:
        return f"<lazy view {self.dotted}>"


def lazy(dotted: str) -> LazyView:
    """A plain Django function view (not DRF's @api_view), imported on first use."""
    return LazyView(dotted)


def lazy_api(dotted: str) -> LazyView:
    """A class-based (DRF) view, imported and turned into a view on first use."""
    return LazyView(dotted, as_view=True)
