"""The upload size limit (CLAIMDESK_MAX_UPLOAD_MB) for bundles, labels and judge runs.

One number, enforced in three places that agree: a form field refuses a larger file with a
field error; the API refuses it with 413 and a JSON detail; and config.middleware refuses any
request body far past it before a byte of it is parsed. The Dockerfile's gunicorn timeout is
sized so an import of a file at the limit finishes inside it.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError

MB = 1024 * 1024


def max_upload_bytes() -> int:
    return settings.CLAIMDESK_MAX_UPLOAD_MB * MB


def too_large_message(size: int) -> str:
    return (
        f"The file is {size / MB:.1f} MB; uploads are limited to "
        f"{settings.CLAIMDESK_MAX_UPLOAD_MB} MB. Split it, or import it with the management "
        "command on the server."
    )


def validate_upload_size(file) -> None:
    """A form field validator."""
    if file is not None and file.size > max_upload_bytes():
        raise ValidationError(too_large_message(file.size), code="too_large")


def declared_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
