"""Model-judge pages, included under p/<slug:slug>/judges/ by config.urls. The views are
imported on their first request (config.lazy). A comparison, one answer's detail and the
few-shot file compute in the request and load the statistics stack; a run's page shows what a
worker stored, and it, the list of runs and the upload do not."""

from django.urls import path

from config.lazy import lazy

urlpatterns = [
    path("", lazy("evaluation.judges.list_views.judges"), name="judges"),
    path("upload/", lazy("evaluation.judges.list_views.judge_upload"), name="judge_upload"),
    path("compare/", lazy("evaluation.judges.views.judge_compare"), name="judge_compare"),
    path("few-shot.jsonl", lazy("evaluation.judges.views.judge_few_shot"), name="judge_few_shot"),
    path("<int:run_pk>/", lazy("evaluation.judges.views.judge_run"), name="judge_run"),
    path(
        "<int:run_pk>/calibration.json",
        lazy("evaluation.judges.views.judge_run_json"),
        name="judge_run_json",
    ),
    path(
        "<int:run_pk>/samples/",
        lazy("evaluation.judges.sample_views.draw_calibration_sample"),
        name="judge_run_sample",
    ),
    path(
        "<int:run_pk>/answers/<int:answer_pk>/",
        lazy("evaluation.judges.views.judge_answer"),
        name="judge_answer",
    ),
]
