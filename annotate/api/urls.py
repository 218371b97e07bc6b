"""The annotate half of /api/v1/. Projects are addressed by slug, tasks by task number (never
by answer id), members by username. Each endpoint is named by the module that holds it."""

from django.urls import path

from annotate.api import (
    adjudication,
    checks,
    flags,
    gold,
    imports,
    members,
    projects,
    reaudit,
    releases,
    tasks,
    webhooks,
)

P = "projects/<slug:slug>/"

urlpatterns = [
    path("projects/", projects.ProjectList.as_view(), name="projects"),
    path(P, projects.ProjectDetail.as_view(), name="project"),
    path(P + "open/", projects.OpenLabelling.as_view(), name="open-labelling"),
    path(P + "label-schema/", projects.LabelSchemaView.as_view(), name="label-schema"),
    path(P + "bundle/", imports.Bundle.as_view(), name="bundle"),
    path(P + "labels/", imports.LabelsImport.as_view(), name="labels"),
    path(P + "gold-imports/", imports.GoldImportUpload.as_view(), name="gold-imports"),
    path(P + "members/", members.MemberList.as_view(), name="members"),
    path(P + "members/<str:username>/", members.MemberDetail.as_view(), name="member"),
    # reviewer
    path(P + "tasks/", tasks.MyTasks.as_view(), name="tasks"),
    path(P + "tasks/next/", tasks.NextTask.as_view(), name="next-task"),
    path(P + "tasks/<int:number>/", tasks.TaskDetail.as_view(), name="task"),
    path(
        P + "tasks/<int:number>/claims/<int:index>/",
        tasks.ClaimDraft.as_view(),
        name="claim-label",
    ),
    path(P + "tasks/<int:number>/answer/", tasks.AnswerDraft.as_view(), name="answer-label"),
    path(P + "tasks/<int:number>/submit/", tasks.Submit.as_view(), name="submit"),
    path(P + "tasks/<int:number>/skip/", tasks.Skip.as_view(), name="skip"),
    path(P + "tasks/<int:number>/reopen/", tasks.Reopen.as_view(), name="reopen"),
    path(P + "tasks/<int:number>/flag/", flags.FlagTask.as_view(), name="flag-task"),
    # lead
    path(
        P + "adjudication/",
        adjudication.AdjudicationQueue.as_view(),
        name="adjudication-queue",
    ),
    path(
        P + "adjudication/<int:number>/",
        adjudication.Adjudication.as_view(),
        name="adjudication",
    ),
    path(P + "reaudit/", reaudit.ReauditList.as_view(), name="reaudit"),
    path(P + "reaudit/keep-all/", reaudit.KeepAll.as_view(), name="reaudit-keep-all"),
    path(P + "reaudit/<int:number>/keep/", reaudit.Keep.as_view(), name="reaudit-keep"),
    path(P + "reaudit/<int:number>/reopen/", reaudit.Reopen.as_view(), name="reaudit-reopen"),
    path(P + "flags/", flags.FlagList.as_view(), name="flags"),
    path(P + "flags/<int:pk>/resolve/", flags.ResolveFlag.as_view(), name="resolve-flag"),
    path(P + "gold.jsonl", gold.GoldJSONL.as_view(), name="gold-jsonl"),
    path(P + "gold.csv", gold.GoldCSV.as_view(), name="gold-csv"),
    path(P + "gold.parquet", gold.GoldParquet.as_view(), name="gold-parquet"),
    path(P + "checks/", checks.Checks.as_view(), name="checks"),
    path(P + "checks/unmark/", checks.Unmark.as_view(), name="checks-unmark"),
    path(P + "checks/import/", checks.Import.as_view(), name="checks-import"),
    path(P + "releases/", releases.ReleaseList.as_view(), name="releases"),
    path(P + "releases/<str:name>/", releases.ReleaseDetail.as_view(), name="release"),
    path(
        P + "releases/<str:name>/gold.<str:fmt>",
        releases.ReleaseDownload.as_view(),
        name="release-download",
    ),
    path(P + "releases/<str:name>/diff/", releases.ReleaseDiff.as_view(), name="release-diff"),
    path(P + "webhooks/", webhooks.EndpointList.as_view(), name="webhooks"),
    path(P + "webhooks/deliveries/", webhooks.DeliveryList.as_view(), name="webhook-deliveries"),
    path(P + "webhooks/<int:pk>/", webhooks.EndpointDetail.as_view(), name="webhook"),
    path(P + "webhooks/<int:pk>/test/", webhooks.EndpointTest.as_view(), name="webhook-test"),
]
