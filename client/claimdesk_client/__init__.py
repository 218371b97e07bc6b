"""A thin Python client for claimdesk's REST API (/api/v1/): import a bundle and wait for its
job, add members, open labelling, read the gold set, make and pull gold releases, push a judge
run, read calibration, agreement and evaluation.

    from claimdesk_client import Client

    claimdesk = Client("http://127.0.0.1:8000", token)
    job = claimdesk.import_bundle("bundle.jsonl", project="my-eval", name="My evaluation")

The client speaks the API whose OpenAPI schema says `info.version` == API_VERSION; its own
version's major number is that version (tests/client/ checks both against the schema)."""

API_VERSION = "1"
__version__ = "1.0.0"

from claimdesk_client.client import Client  # noqa: E402 (after __version__, which it reads)
from claimdesk_client.errors import (  # noqa: E402
    AuthError,
    ClaimdeskError,
    Conflict,
    JobFailed,
    LineError,
    LineErrors,
    NotFound,
    Refused,
    Unavailable,
)

__all__ = [
    "API_VERSION",
    "AuthError",
    "ClaimdeskError",
    "Client",
    "Conflict",
    "JobFailed",
    "LineError",
    "LineErrors",
    "NotFound",
    "Refused",
    "Unavailable",
    "__version__",
]
