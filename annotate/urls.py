"""The pages of annotate, by capability: each view is named by the folder it lives in."""

from django.urls import path

from annotate.adjudication import views as adjudication
from annotate.checks import views as checks
from annotate.common import docs_views
from annotate.gold import views as gold
from annotate.imports import views as imports
from annotate.labelling import views as labelling
from annotate.members import views as members
from annotate.projects import views as projects
from annotate.projects.access import project_creators_only
from annotate.queue import views as queue
from annotate.releases import views as releases
from annotate.webhooks import views as webhooks

urlpatterns = [
    path("", projects.home, name="home"),
    # the format docs, for signed-in users
    path("docs/<slug:name>/", docs_views.doc, name="doc"),
    path("docs/<str:filename>", docs_views.doc_file, name="doc_file"),
    # reviewer
    path("p/<slug:slug>/", queue.project_page, name="project"),
    path("p/<slug:slug>/next/", queue.take_next, name="take_next"),
    path("p/<slug:slug>/done/", queue.queue_empty, name="queue_empty"),
    path("p/<slug:slug>/tasks/", labelling.my_tasks, name="my_tasks"),
    path("p/<slug:slug>/tasks/<int:number>/", labelling.task, name="task"),
    path(
        "p/<slug:slug>/tasks/<int:number>/claims/<int:index>/",
        labelling.save_claim,
        name="save_claim",
    ),
    path("p/<slug:slug>/tasks/<int:number>/answer/", labelling.save_answer, name="save_answer"),
    path("p/<slug:slug>/tasks/<int:number>/submit/", labelling.submit, name="submit"),
    path("p/<slug:slug>/tasks/<int:number>/skip/", labelling.skip, name="skip"),
    path("p/<slug:slug>/tasks/<int:number>/reopen/", labelling.reopen, name="reopen"),
    path("p/<slug:slug>/tasks/<int:number>/flag/", labelling.flag, name="flag_task"),
    # lead
    path("projects/new/", project_creators_only(imports.project_new), name="project_new"),
    path("p/<slug:slug>/setup/", projects.project_setup, name="project_setup"),
    path("p/<slug:slug>/upload/", imports.project_upload, name="project_upload"),
    path("p/<slug:slug>/members/", members.members, name="members"),
    path("p/<slug:slug>/guidelines/", projects.guidelines, name="guidelines"),
    path("p/<slug:slug>/guidelines/reaudit/", adjudication.reaudit_page, name="reaudit"),
    path(
        "p/<slug:slug>/guidelines/reaudit/keep/",
        adjudication.reaudit_keep_all,
        name="reaudit_keep_all",
    ),
    path(
        "p/<slug:slug>/guidelines/reaudit/<int:number>/",
        adjudication.reaudit_action,
        name="reaudit_action",
    ),
    path("p/<slug:slug>/claims/", projects.boundaries, name="boundaries"),
    path("p/<slug:slug>/claims/<int:answer_pk>/", projects.boundary_edit, name="boundary_edit"),
    path("p/<slug:slug>/open/", projects.open_project, name="open_labelling"),
    path("p/<slug:slug>/schema/", projects.label_schema, name="label_schema"),
    path(
        "p/<slug:slug>/adjudicate/",
        adjudication.adjudication_queue,
        name="adjudication_queue",
    ),
    path("p/<slug:slug>/adjudicate/<int:number>/", adjudication.adjudicate, name="adjudicate"),
    path(
        "p/<slug:slug>/adjudicate/flags/<int:pk>/resolve/",
        adjudication.resolve_flag,
        name="resolve_flag",
    ),
    path("p/<slug:slug>/gold/", gold.gold_page, name="gold"),
    path("p/<slug:slug>/gold.<str:fmt>", gold.gold_download, name="gold_download"),
    path("p/<slug:slug>/gold/releases/", releases.release_new, name="release_new"),
    path(
        "p/<slug:slug>/gold/releases/<str:name>/gold.<str:fmt>",
        releases.release_download,
        name="release_download",
    ),
    path("p/<slug:slug>/checks/mark/", checks.mark, name="checks_mark"),
    path("p/<slug:slug>/checks/unmark/", checks.unmark, name="checks_unmark"),
    path("p/<slug:slug>/checks/import/", checks.import_file, name="checks_import"),
    path("p/<slug:slug>/checks/rate/", checks.rate, name="checks_rate"),
    path("p/<slug:slug>/webhooks/", webhooks.webhooks, name="webhooks"),
    path("p/<slug:slug>/webhooks/<int:pk>/", webhooks.webhook_edit, name="webhook_edit"),
]
