"""A kept (CONN_MAX_AGE) PostgreSQL connection that the server drops costs no request: the
app checks it at the start of the next request and reconnects, instead of answering 500."""

from __future__ import annotations

import io
import time

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection

from tests.api import token_client

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def call(app: WSGIHandler, path: str, token: str) -> int:
    """One request through the WSGI app in this thread, as gunicorn's worker makes it: the
    request_started/finished signals run, so Django manages the kept connection itself (the
    test client would switch that off)."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "HTTP_AUTHORIZATION": token,
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
    }
    statuses = []
    response = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        b"".join(response)
    finally:
        response.close()
    return int(statuses[0].split()[0])


def terminate_backend(pid: int) -> None:
    params = connection.get_connection_params()
    admin = {k: params[k] for k in ("host", "port", "user", "password") if params.get(k)}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        for _ in range(100):
            gone = other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid])
            if gone.fetchone() is None:
                return
            time.sleep(0.05)
    raise AssertionError(f"backend {pid} is still there")


def test_a_connection_the_server_dropped_is_replaced_before_the_next_request(lead):
    token = token_client(lead)._credentials["HTTP_AUTHORIZATION"]
    app = WSGIHandler()
    assert call(app, "/api/v1/projects/", token) == 200
    kept = connection.connection
    assert kept is not None, "CONN_MAX_AGE should keep the connection between requests"
    terminate_backend(kept.info.backend_pid)

    assert call(app, "/api/v1/projects/", token) == 200
    assert connection.connection is not kept
