"""The REST API: /api/v1/ (its root here, then annotate.api, evaluation.api and the jobs'
endpoints, annotate.api.jobs), the OpenAPI schema at /api/schema/ and its documentation at
/api/docs/ (Swagger UI served from our own static files by drf-spectacular-sidecar, no CDN).
Included from config.urls."""

import json

from csp.constants import SELF
from django.http import JsonResponse
from django.templatetags.static import static
from django.urls import include, path, re_path, reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import serializers
from rest_framework.response import Response

from annotate.api import jobs as jobs_api
from annotate.api.base import DENIED, APIView
from annotate.api.urls import urlpatterns as annotate_api_urls
from config.lazy import lazy_api

P = "projects/<slug:slug>/"

evaluation_urls = [
    path(P + "agreement/", lazy_api("evaluation.api.Agreement"), name="agreement"),
    path(P + "reviewers/", lazy_api("evaluation.api.Reviewers"), name="reviewers"),
    path(
        P + "reviewers/<str:username>/clear-drift/",
        lazy_api("evaluation.api.ClearDrift"),
        name="clear-drift",
    ),
    path(P + "evaluation/", lazy_api("evaluation.api.Evaluation"), name="evaluation"),
    path(P + "evaluation/compare/", lazy_api("evaluation.api.Comparison"), name="comparison"),
    path(P + "judge-runs/", lazy_api("evaluation.api.JudgeRuns"), name="judge-runs"),
    path(
        P + "judge-runs/<int:run_id>/", lazy_api("evaluation.api.JudgeRunDetail"), name="judge-run"
    ),
    path(
        P + "judge-runs/<int:run_id>/calibration/",
        lazy_api("evaluation.api.Calibration"),
        name="calibration",
    ),
    path(
        P + "judge-runs/<int:run_id>/samples/",
        lazy_api("evaluation.api.CalibrationSamples"),
        name="calibration-samples",
    ),
    path(
        P + "judge-runs/<int:run_id>/samples/<int:design_id>/",
        lazy_api("evaluation.api.CalibrationSampleDetail"),
        name="calibration-sample",
    ),
]


class RootSerializer(serializers.Serializer):
    user = serializers.CharField(help_text="Whose token (or session) this is.")
    projects = serializers.URLField(
        help_text="The projects you have a role in; POST a bundle here to create one."
    )
    project = serializers.CharField(
        help_text="One project, `{slug}` filled in; the schema lists what lies under it."
    )
    job = serializers.CharField(help_text="A background job, `{id}` as an upload's 202 names it.")
    schema = serializers.URLField(help_text="The OpenAPI schema of every endpoint.")
    docs = serializers.URLField(help_text="The same, as browsable documentation.")
    token = serializers.URLField(help_text="Where a signed-in person makes and revokes tokens.")


class APIRoot(APIView):
    """Where a script starts, and checks its token: who it is and where everything is."""

    @extend_schema(
        tags=["api"],
        operation_id="api_root",
        summary="The API's root: who you are, and where to start",
        responses={200: RootSerializer, 401: DENIED[401]},
    )
    def get(self, request):
        root = request.build_absolute_uri(reverse("api:root"))
        return Response(
            {
                "user": request.user.get_username(),
                "projects": request.build_absolute_uri(reverse("api:projects")),
                # Templates, as the schema writes paths: braces are not a URL's to escape.
                "project": root + "projects/{slug}/",
                "job": root + "jobs/{id}/",
                "schema": request.build_absolute_uri(reverse("api-schema")),
                "docs": request.build_absolute_uri(reverse("api-docs")),
                "token": request.build_absolute_uri(reverse("api_token")),
            }
        )


@csrf_exempt
def not_found(request, *args, **kwargs) -> JsonResponse:
    return JsonResponse({"detail": "Not found."}, status=404)


class SwaggerView(SpectacularSwaggerSplitView):
    """Swagger UI from drf-spectacular-sidecar's static files whatever SPECTACULAR_SETTINGS
    say, so the docs page works offline and loads nothing from a CDN; the online validator
    badge (a request to swagger.io) is switched off for the same reason. GET only: an OPTIONS
    request looked for a template DRF's metadata renderer does not have (a 500).

    The split view serves its start-up script from ?script instead of inline, and our
    template links the page's few rules instead of an inline <style>, so the site's
    Content-Security-Policy holds here too; Swagger UI's stylesheet draws its icons as data:
    images, the one source this page adds."""

    http_method_names = ["get", "head"]
    template_name = "api/swagger_ui.html"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        ui = spectacular_settings.SWAGGER_UI_SETTINGS
        if isinstance(ui, dict) and "settings" in response.data:
            response.data["settings"] = json.dumps({**ui, "validatorUrl": None}, indent=2)
        response._csp_update = {"img-src": [SELF, "data:"]}  # django-csp's per-response hook
        return response

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"drf_spectacular_sidecar/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static("drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png")


jobs_urls = [
    path("jobs/<uuid:job_id>/", jobs_api.JobDetail.as_view(), name="job"),
    path("jobs/<uuid:job_id>/retry/", jobs_api.JobRetry.as_view(), name="job-retry"),
    path("jobs/<uuid:job_id>/download/", jobs_api.JobDownload.as_view(), name="job-download"),
]

root_url = path("", APIRoot.as_view(), name="root")

urlpatterns = [
    path("api/v1/", include(([root_url, *annotate_api_urls, *evaluation_urls, *jobs_urls], "api"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Anything else under /api/ (an unknown path, a task "number" that is not a number) is a
    # JSON 404 like every other API answer, not the site's HTML page.
    re_path(r"^api/", not_found),
]
