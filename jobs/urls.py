from django.urls import path

from jobs import views

urlpatterns = [
    path("jobs/<uuid:job_id>/", views.job_page, name="job"),
    path("jobs/<uuid:job_id>/retry/", views.job_retry, name="job_retry"),
    path("jobs/<uuid:job_id>/download/", views.job_download, name="job_download"),
]
