"""What the OpenAPI schema says that drf-spectacular does not read from the serializers."""

from __future__ import annotations


def empty_query_values(result: dict, generator, request, public) -> dict:
    """An optional query parameter sent empty (`?state=`, `?format=`) is read as left out:
    DRF reads a query string as it reads an HTML form, where an empty field is an unset one.
    The schema says so -- its enum takes "", its text needs no length -- instead of calling
    that request invalid while the API answers it (a drf-spectacular postprocessing hook)."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") != "query" or parameter.get("required"):
                    continue
                schema = parameter.get("schema", {})
                if schema.get("type") != "string":
                    continue
                if "enum" in schema and "" not in schema["enum"]:
                    schema["enum"] = [*schema["enum"], ""]
                if schema.get("minLength") == 1:
                    del schema["minLength"]
    return result


def upload_bodies_required(result: dict, generator, request, public) -> dict:
    """An upload (a multipart `file`, or the JSONL itself as the body) has a body: without
    one it is refused (400, the file is empty), so the schema marks it required."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            body = operation.get("requestBody")
            if body and "application/x-ndjson" in body.get("content", {}):
                body["required"] = True
    return result
