"""A project's webhooks in the API (leads only): endpoints (the secret is in the answer to
creating one, or to rotating it, and never again), a test event, and the delivery log."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotate.api.base import ERROR_400, LeadView, ListView, TextField, query, responses
from annotate.models import WebhookDelivery, WebhookEndpoint
from annotate.webhooks import selectors, services

EVENTS = WebhookEndpoint.Event.choices


class EndpointSerializer(serializers.ModelSerializer):
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENTS))
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "events", "active", "created_by", "created_at"]


class EndpointWithSecretSerializer(EndpointSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text="`whsec_` and base64: give it to `standardwebhooks.Webhook(secret)`. Shown "
        "in this answer only.",
    )

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]


class EndpointChangedSerializer(EndpointSerializer):
    secret = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The new secret when `rotate_secret` was true (shown in this answer only); "
        "otherwise null.",
    )

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]


class NewEndpointSerializer(serializers.Serializer):
    url = TextField(max_length=2000, help_text="http:// or https://, to a public address.")
    description = TextField(max_length=200, required=False, allow_blank=True, default="")
    events = serializers.MultipleChoiceField(choices=EVENTS, allow_empty=False)


class EndpointChangeSerializer(serializers.Serializer):
    url = TextField(max_length=2000, required=False)
    description = TextField(max_length=200, required=False, allow_blank=True)
    events = serializers.MultipleChoiceField(choices=EVENTS, allow_empty=False, required=False)
    active = serializers.BooleanField(required=False)
    rotate_secret = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: a new secret, in this answer only; the old one stops signing.",
    )


class DeliverySerializer(serializers.ModelSerializer):
    endpoint = serializers.IntegerField(source="endpoint_id")

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "endpoint",
            "event",
            "message_id",
            "status",
            "attempts",
            "status_code",
            "error",
            "created_at",
            "next_attempt_at",
            "delivered_at",
            "payload",
        ]


class DeliveryFilterSerializer(serializers.Serializer):
    endpoint = serializers.IntegerField(required=False, min_value=1)
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices, required=False)


def _invalid(exc: services.EndpointInvalid) -> ValidationError:
    return ValidationError({exc.field: [str(exc)]})


class EndpointList(ListView, LeadView):
    serializer_class = EndpointSerializer

    def get_queryset(self):
        return selectors.endpoints_of(self.project).select_related("created_by")

    @extend_schema(
        tags=["webhooks"],
        summary="The project's webhook endpoints",
        responses=responses(EndpointSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["webhooks"],
        summary="Register an endpoint (its signing secret is in this answer only)",
        request=NewEndpointSerializer,
        responses=responses({201: EndpointWithSecretSerializer}, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = NewEndpointSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            endpoint = services.register_endpoint(
                project=self.project,
                url=data["url"],
                events=sorted(data["events"]),
                description=data["description"],
                by=request.user,
            )
        except services.EndpointInvalid as exc:
            raise _invalid(exc) from exc
        return Response(EndpointWithSecretSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointView(LeadView):
    def endpoint(self, pk: int) -> WebhookEndpoint:
        endpoint = selectors.endpoint_of(self.project, pk)
        if endpoint is None:
            raise NotFound()
        return endpoint


class EndpointDetail(EndpointView):
    @extend_schema(
        tags=["webhooks"], summary="One endpoint", responses=responses(EndpointSerializer)
    )
    def get(self, request, slug, pk):
        return Response(EndpointSerializer(self.endpoint(pk)).data)

    @extend_schema(
        tags=["webhooks"],
        summary="Change an endpoint, turn it off or on, or rotate its secret",
        request=EndpointChangeSerializer,
        responses=responses(EndpointChangedSerializer, r400=ERROR_400),
    )
    def patch(self, request, slug, pk):
        serializer = EndpointChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            endpoint = services.update_endpoint(
                endpoint=self.endpoint(pk),
                url=data.get("url"),
                events=sorted(data["events"]) if "events" in data else None,
                description=data.get("description"),
                active=data.get("active"),
                rotate_secret=data["rotate_secret"],
            )
        except services.EndpointInvalid as exc:
            raise _invalid(exc) from exc
        answer = EndpointSerializer(endpoint).data
        answer["secret"] = endpoint.secret if data["rotate_secret"] else None
        return Response(answer)

    @extend_schema(
        tags=["webhooks"],
        summary="Delete an endpoint and its delivery log",
        responses=responses({204: None}),
    )
    def delete(self, request, slug, pk):
        services.delete_endpoint(endpoint=self.endpoint(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointTest(EndpointView):
    @extend_schema(
        tags=["webhooks"],
        summary="Send a `webhook.test` event to this endpoint",
        description="Queued like any event: the answer is the delivery, pending; read it "
        "again in the delivery log.",
        request=None,
        responses=responses({202: DeliverySerializer}),
    )
    def post(self, request, slug, pk):
        delivery = services.send_test_event(endpoint=self.endpoint(pk), by=request.user)
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class DeliveryList(ListView, LeadView):
    serializer_class = DeliverySerializer

    def get_queryset(self):
        filters = query(DeliveryFilterSerializer, self.request)
        endpoint = None
        if "endpoint" in filters:
            endpoint = selectors.endpoint_of(self.project, filters["endpoint"])
            if endpoint is None:
                return WebhookDelivery.objects.none()
        return selectors.delivery_log(self.project, endpoint=endpoint, status=filters.get("status"))

    @extend_schema(
        tags=["webhooks"],
        summary="The delivery log, newest first",
        parameters=[DeliveryFilterSerializer],
        responses=responses(DeliverySerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
