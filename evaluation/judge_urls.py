"""Model-judge pages, included under p/<slug:slug>/judges/ by config.urls."""

from django.urls import path

from evaluation import judge_views

urlpatterns = [
    path("", judge_views.judges, name="judges"),
    path("upload/", judge_views.judge_upload, name="judge_upload"),
    path("compare/", judge_views.judge_compare, name="judge_compare"),
    path("few-shot.jsonl", judge_views.judge_few_shot, name="judge_few_shot"),
    path("<int:run_pk>/", judge_views.judge_run, name="judge_run"),
    path("<int:run_pk>/calibration.json", judge_views.judge_run_json, name="judge_run_json"),
    path(
        "<int:run_pk>/answers/<int:answer_pk>/",
        judge_views.judge_answer,
        name="judge_answer",
    ),
]
