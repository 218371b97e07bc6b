"""The annotate half of /api/v1/. Projects are addressed by slug, tasks by task number (never
by answer id), members by username."""

from django.urls import path

from annotate.api import views

P = "projects/<slug:slug>/"

urlpatterns = [
    path("projects/", views.ProjectList.as_view(), name="projects"),
    path(P, views.ProjectDetail.as_view(), name="project"),
    path(P + "open/", views.OpenLabelling.as_view(), name="open-labelling"),
    path(P + "label-schema/", views.LabelSchemaView.as_view(), name="label-schema"),
    path(P + "bundle/", views.Bundle.as_view(), name="bundle"),
    path(P + "labels/", views.LabelsImport.as_view(), name="labels"),
    path(P + "gold-imports/", views.GoldImportUpload.as_view(), name="gold-imports"),
    path(P + "members/", views.MemberList.as_view(), name="members"),
    path(P + "members/<str:username>/", views.MemberDetail.as_view(), name="member"),
    # reviewer
    path(P + "tasks/", views.MyTasks.as_view(), name="tasks"),
    path(P + "tasks/next/", views.NextTask.as_view(), name="next-task"),
    path(P + "tasks/<int:number>/", views.TaskDetail.as_view(), name="task"),
    path(
        P + "tasks/<int:number>/claims/<int:index>/",
        views.ClaimDraft.as_view(),
        name="claim-label",
    ),
    path(P + "tasks/<int:number>/answer/", views.AnswerDraft.as_view(), name="answer-label"),
    path(P + "tasks/<int:number>/submit/", views.Submit.as_view(), name="submit"),
    path(P + "tasks/<int:number>/skip/", views.Skip.as_view(), name="skip"),
    path(P + "tasks/<int:number>/reopen/", views.Reopen.as_view(), name="reopen"),
    # lead
    path(P + "adjudication/", views.AdjudicationQueue.as_view(), name="adjudication-queue"),
    path(P + "adjudication/<int:number>/", views.Adjudication.as_view(), name="adjudication"),
    path(P + "gold.jsonl", views.GoldJSONL.as_view(), name="gold-jsonl"),
    path(P + "gold.csv", views.GoldCSV.as_view(), name="gold-csv"),
]
