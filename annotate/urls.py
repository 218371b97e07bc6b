from django.urls import path

from annotate import views
from annotate.adjudication.views import adjudicate, adjudication_queue
from annotate.common import docs_views
from annotate.gold.views import gold_download, gold_page
from annotate.imports.views import project_new, project_upload
from annotate.members.views import members
from annotate.projects.access import project_creators_only
from annotate.projects.views import (
    boundaries,
    boundary_edit,
    guidelines,
    home,
    label_schema,
    open_project,
    project_setup,
)

urlpatterns = [
    path("", home, name="home"),
    # the format docs, for signed-in users
    path("docs/<slug:name>/", docs_views.doc, name="doc"),
    path("docs/<str:filename>", docs_views.doc_file, name="doc_file"),
    # reviewer
    path("p/<slug:slug>/", views.project_page, name="project"),
    path("p/<slug:slug>/next/", views.take_next, name="take_next"),
    path("p/<slug:slug>/done/", views.queue_empty, name="queue_empty"),
    path("p/<slug:slug>/tasks/", views.my_tasks, name="my_tasks"),
    path("p/<slug:slug>/tasks/<int:number>/", views.task, name="task"),
    path(
        "p/<slug:slug>/tasks/<int:number>/claims/<int:index>/",
        views.save_claim,
        name="save_claim",
    ),
    path("p/<slug:slug>/tasks/<int:number>/answer/", views.save_answer, name="save_answer"),
    path("p/<slug:slug>/tasks/<int:number>/submit/", views.submit, name="submit"),
    path("p/<slug:slug>/tasks/<int:number>/skip/", views.skip, name="skip"),
    path("p/<slug:slug>/tasks/<int:number>/reopen/", views.reopen, name="reopen"),
    # lead
    path("projects/new/", project_creators_only(project_new), name="project_new"),
    path("p/<slug:slug>/setup/", project_setup, name="project_setup"),
    path("p/<slug:slug>/upload/", project_upload, name="project_upload"),
    path("p/<slug:slug>/members/", members, name="members"),
    path("p/<slug:slug>/guidelines/", guidelines, name="guidelines"),
    path("p/<slug:slug>/claims/", boundaries, name="boundaries"),
    path("p/<slug:slug>/claims/<int:answer_pk>/", boundary_edit, name="boundary_edit"),
    path("p/<slug:slug>/open/", open_project, name="open_labelling"),
    path("p/<slug:slug>/schema/", label_schema, name="label_schema"),
    path("p/<slug:slug>/adjudicate/", adjudication_queue, name="adjudication_queue"),
    path("p/<slug:slug>/adjudicate/<int:number>/", adjudicate, name="adjudicate"),
    path("p/<slug:slug>/gold/", gold_page, name="gold"),
    path("p/<slug:slug>/gold.<str:fmt>", gold_download, name="gold_download"),
]
