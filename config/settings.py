"""claimdesk settings: one file, driven by the environment.

DATABASE_URL   postgres://user@host:5432/name selects PostgreSQL (psycopg 3); default is an
               SQLite file under var/ so `make run` works with no setup.
SECRET_KEY     required in production; without it a random key is kept in var/secret_key
               so a development checkout never needs a secret in the repository.
DEBUG          "1"/"true" for development; off by default.
HTTPS          "true" in production behind TLS: secure cookies, https redirect, HSTS.
ALLOWED_HOSTS  comma-separated; defaults to localhost names.
CLAIMDESK_TASKS  where background work runs: "database" (default; a worker started with
               `manage.py worker` takes it from the database), "rq" (Redis + RQ, REDIS_URL) or
               "immediate" (inside the request or command that asked: no worker needed).
OIDC_RP_CLIENT_ID  set: single sign-on with OpenID Connect is on (the OIDC_* and
               CLAIMDESK_OIDC_* variables below; README.md, "Single sign-on").
CLAIMDESK_PASSWORD_LOGIN  "false" removes password login (single sign-on must be on).
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from sso.mapping import MappingInvalid, parse_role_mapping

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("CLAIMDESK_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _local_secret_key() -> str:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


DEBUG = env_bool("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY") or _local_secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",
    "csp",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "simple_history",
    "django_tasks",
    "django_tasks_db",
    "annotate",
    "evaluation",
    "jobs",
]

MIDDLEWARE = [
    # First: /healthz answers load balancers before host checks, redirects and sessions.
    "config.middleware.HealthzMiddleware",
    # Before everything that reads the database: a GET whose connection broke runs again.
    "config.middleware.RetryOnceMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads the body (sessions, CSRF): an oversized upload is refused unread.
    "config.middleware.UploadLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The audit trail (django-simple-history) records who made each change.
    "simple_history.middleware.HistoryRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.NoStoreMiddleware",
    # Last, as django-axes asks: it turns a lockout into the login page's answer.
    "axes.middleware.AxesMiddleware",
]
if env_bool("CLAIMDESK_QUERY_COUNT_HEADER"):  # bench/reference.py only: counts queries per request
    MIDDLEWARE.insert(0, "config.middleware.QueryCountHeaderMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sso.views.sign_in_options",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'claimdesk.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
        # A kept connection the server dropped (a restart, a failover, an idle timeout) is
        # checked and replaced at the start of a request instead of failing that request.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # Concurrent writers (the dev server's threads, a running import) would otherwise see
    # "database is locked" immediately; WAL and a busy timeout make SQLite usable for a demo.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    # Validates nothing: its password_changed hook revokes the person's API tokens.
    {"NAME": "annotate.members.tokens.RevokeTokensOnPasswordChange"},
]

# --- Single sign-on: OpenID Connect through mozilla-django-oidc (sso/; README.md) -----------
# On when OIDC_RP_CLIENT_ID is set. The provider's endpoints are given one by one, or read from
# its discovery document at the first login that needs them (sso.provider): not here, so a
# provider that is down stops no server. The OIDC_* names are the library's own settings.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "").strip()
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_DISCOVERY_URL = os.environ.get("OIDC_OP_DISCOVERY_URL", "").strip()
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "").strip()
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "").strip()
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "").strip()
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "").strip()
OIDC_OP_LOGOUT_ENDPOINT = os.environ.get("OIDC_OP_LOGOUT_ENDPOINT", "").strip()
# RS256 is what providers sign ID tokens with unless told otherwise (the library's default,
# HS256, signs with the client secret); the keys come from the provider's JWKS endpoint.
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256").strip()
OIDC_RP_IDP_SIGN_KEY = os.environ.get("OIDC_RP_IDP_SIGN_KEY") or None
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
# Seconds to wait for the provider (the library waits for ever by default).
OIDC_TIMEOUT = int(os.environ.get("OIDC_TIMEOUT", "10"))
# The words after "Sign in with" on the login page.
CLAIMDESK_OIDC_PROVIDER_NAME = os.environ.get("CLAIMDESK_OIDC_PROVIDER_NAME", "single sign-on")
# The claim whose value is the account's username (sso.backend says which accounts it may
# sign in to). It must not change for a person: a new value is a new account.
CLAIMDESK_OIDC_USERNAME_CLAIM = os.environ.get(
    "CLAIMDESK_OIDC_USERNAME_CLAIM", "preferred_username"
)
# Which claim gives roles in which projects (sso.mapping; none by default).
try:
    CLAIMDESK_OIDC_ROLES = parse_role_mapping(os.environ.get("CLAIMDESK_OIDC_ROLES", ""))
except MappingInvalid as exc:
    raise ImproperlyConfigured(f"CLAIMDESK_OIDC_ROLES: {exc}") from exc
# Logging out also ends the session at the provider (its end_session_endpoint), which needs
# the ID token kept in the session.
CLAIMDESK_OIDC_PROVIDER_LOGOUT = env_bool("CLAIMDESK_OIDC_PROVIDER_LOGOUT")
OIDC_STORE_ID_TOKEN = CLAIMDESK_OIDC_PROVIDER_LOGOUT
CLAIMDESK_PASSWORD_LOGIN = env_bool("CLAIMDESK_PASSWORD_LOGIN", True)


def _sso_problems() -> list[str]:
    if not OIDC_RP_CLIENT_ID:
        if CLAIMDESK_PASSWORD_LOGIN:
            return []
        return ["CLAIMDESK_PASSWORD_LOGIN=false needs single sign-on on (OIDC_RP_CLIENT_ID)"]
    if OIDC_OP_DISCOVERY_URL:
        return []
    endpoints = {
        "OIDC_OP_AUTHORIZATION_ENDPOINT": OIDC_OP_AUTHORIZATION_ENDPOINT,
        "OIDC_OP_TOKEN_ENDPOINT": OIDC_OP_TOKEN_ENDPOINT,
        "OIDC_OP_USER_ENDPOINT": OIDC_OP_USER_ENDPOINT,
    }
    if OIDC_RP_SIGN_ALGO.startswith(("RS", "ES")) and not OIDC_RP_IDP_SIGN_KEY:
        endpoints["OIDC_OP_JWKS_ENDPOINT"] = OIDC_OP_JWKS_ENDPOINT
    missing = [name for name, url in endpoints.items() if not url]
    if missing:
        return [f"single sign-on needs OIDC_OP_DISCOVERY_URL, or {', '.join(missing)}"]
    return []


if _sso_problems():
    raise ImproperlyConfigured("; ".join(_sso_problems()))

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username+address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    *(["django.contrib.auth.backends.ModelBackend"] if CLAIMDESK_PASSWORD_LOGIN else []),
    # Also answers permission checks (a ModelBackend), so it suffices without passwords.
    *(["sso.backend.SsoBackend"] if OIDC_RP_CLIENT_ID else []),
]
# Login throttling (django-axes) on /login/ and /admin/login/: after this many wrong passwords
# for one username from one address, that pair is refused -- the right password included --
# until the cool-off has passed; every further failure restarts the cool-off. Keyed on the
# pair, so a wrong-password storm from one address does not lock the person out elsewhere.
AXES_FAILURE_LIMIT = int(os.environ.get("CLAIMDESK_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("CLAIMDESK_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "annotate.members.account_views.locked_out"
# A return from the single sign-on provider is no password guess: not counted (sso.views).
AXES_WHITELIST_CALLABLE = "sso.views.not_a_password_login"
# Behind reverse proxies, how many of them append to X-Forwarded-For: the client's address is
# then read from that header (config/proxies.py). 0, the default, ignores the header.
CLAIMDESK_PROXY_COUNT = int(os.environ.get("CLAIMDESK_PROXY_COUNT", "0"))
AXES_CLIENT_IP_CALLABLE = "config.proxies.client_ip"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Uploads waiting for a worker and the files exports write. App servers and workers must
    # all reach it: one machine's disk, a shared volume, or an object store's backend here.
    "jobs": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": VAR_DIR / "jobs"},
    },
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# The largest bundle, labels or judge-run file accepted, in the browser and the API (see
# annotate.imports.uploads). The Dockerfile's gunicorn --timeout is sized for an import this big.
CLAIMDESK_MAX_UPLOAD_MB = int(os.environ.get("CLAIMDESK_MAX_UPLOAD_MB", "100"))
# Bundles can be large; uploads past this size are streamed to a temporary file.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotate.members.tokens.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# API tokens (django-rest-knox): stored as SHA-512 digests, sent as `Authorization: Token <key>`,
# valid for CLAIMDESK_TOKEN_DAYS days; made and revoked on /account/token/.
# An address that sends this many wrong API tokens within the window gets 429 for every token
# until the window ends (annotate.members.tokens.TokenAuthentication; counted per server process).
CLAIMDESK_TOKEN_FAILURE_LIMIT = int(os.environ.get("CLAIMDESK_TOKEN_FAILURE_LIMIT", "20"))
CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS = int(
    os.environ.get("CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS", "60")
)
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=int(os.environ.get("CLAIMDESK_TOKEN_DAYS", "30"))),
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "claimdesk API",
    "DESCRIPTION": "Claim-level labelling of RAG answers: bundles, blinded tasks, labels, "
    "agreement, gold export, judge calibration and evaluation.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Without deep links an operation's path is no link inside its expand button (nested
    # interactive controls, which screen readers and axe refuse).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    # Request bodies get components of their own: what a request must carry (a required
    # string is not empty) is not what a response holds.
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "annotate.api.openapi.empty_query_values",
        "annotate.api.openapi.upload_bodies_required",
    ],
    # Two models have a `status` field with different choices: name each set.
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "annotate.models.Assignment.Status",
        "JobStatusEnum": "jobs.models.Job.Status",
    },
}

# --- Background work (the Tasks API of Django 6, through the django-tasks backport) ----------
# Imports, large gold exports and report recomputation run as tasks (jobs/). The backend is
# chosen here and nowhere else; code enqueues through jobs.framework only.
TASK_BACKENDS = {
    # The default: tasks are rows in this database, taken by `manage.py worker` (db_worker).
    # Nothing more to run than the app's own database.
    "database": "django_tasks_db.DatabaseBackend",
    # Larger deployments: Redis + RQ workers (`manage.py worker` runs rqworker).
    "rq": "django_tasks_rq.RQBackend",
    # In the request or command that enqueues: no worker, no progress while it runs.
    "immediate": "django_tasks.backends.immediate.ImmediateBackend",
}
CLAIMDESK_TASKS = os.environ.get("CLAIMDESK_TASKS", "database").strip().lower()
if CLAIMDESK_TASKS not in TASK_BACKENDS:
    raise ImproperlyConfigured(
        f"CLAIMDESK_TASKS={CLAIMDESK_TASKS!r}: choose one of {', '.join(TASK_BACKENDS)}"
    )
TASKS = {"default": {"BACKEND": TASK_BACKENDS[CLAIMDESK_TASKS]}}
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# The longest a job may run before RQ stops it (the database worker has no limit).
CLAIMDESK_JOB_TIMEOUT = int(os.environ.get("CLAIMDESK_JOB_TIMEOUT", "3600"))
if CLAIMDESK_TASKS == "rq":
    INSTALLED_APPS.append("django_rq")
    RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": CLAIMDESK_JOB_TIMEOUT}}
# A running job writes a heartbeat every second; one silent for this long has lost its worker
# (killed, out of memory, a machine gone).
CLAIMDESK_JOB_STALE_SECONDS = int(os.environ.get("CLAIMDESK_JOB_STALE_SECONDS", "60"))
# A live worker takes such a job up again on its own (jobs.services.resume_stalled), until it
# has been run this many times since a person asked; then it fails, saying so.
CLAIMDESK_JOB_MAX_ATTEMPTS = int(os.environ.get("CLAIMDESK_JOB_MAX_ATTEMPTS", "3"))
# A database worker that holds more than this after a job starts afresh in the same process:
# a fresh worker is about 80 MB, and the reports of a 10,000-answer project leave it holding
# 200-300 MB. 0 keeps the worker as it is. RQ forks a process per job instead.
CLAIMDESK_WORKER_MAX_MEMORY_MB = int(os.environ.get("CLAIMDESK_WORKER_MAX_MEMORY_MB", "200"))
# Gold sets with more rows than this are written to a file by a worker; smaller ones stream
# straight from the request. bench/tasks.py writes about 9,000 rows/s on an idle 2-core
# machine: 20,000 rows take 2-3 s, and several times that on a busy server is still far inside
# gunicorn's and a proxy's timeouts, while a 110,000-row set (12 s idle) is not.
CLAIMDESK_GOLD_STREAM_MAX_ROWS = int(os.environ.get("CLAIMDESK_GOLD_STREAM_MAX_ROWS", "20000"))
# Reports (agreement, evaluation, calibration) are stored per project revision
# (annotate.common.computed). The first one of a project with a gold set up to this size is
# computed in the request; a larger one by a worker while the page waits.
# Who may create projects: staff and users with the "Can add project" permission
# (annotate.add_project), or every signed-in user when this is on (annotate.projects.access).
CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS = env_bool("CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS")

# Webhooks (annotate.webhooks, docs/webhooks.md): how long a receiver has to answer one
# attempt (connecting, then each read), and the waits before each retry of a failed delivery;
# after the last one it is marked failed. Deliveries go out from a worker, never a request.
CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS", "5"))
try:
    CLAIMDESK_WEBHOOK_RETRY_SECONDS = [
        float(wait) for wait in env_list("CLAIMDESK_WEBHOOK_RETRY_SECONDS", "5,30,120,600,3600")
    ]
except ValueError as exc:
    raise ImproperlyConfigured(
        f"CLAIMDESK_WEBHOOK_RETRY_SECONDS: seconds, comma-separated ({exc})"
    ) from exc
# Whether an endpoint may be on this machine or a private network (localhost, 10.x, 192.168.x,
# link-local): off, so that a lead's URL cannot make the server call its own neighbours.
CLAIMDESK_WEBHOOK_ALLOW_PRIVATE = env_bool("CLAIMDESK_WEBHOOK_ALLOW_PRIVATE")

# A task a reviewer took but did not touch for this long returns to the pool.
CLAIMDESK_ABANDON_AFTER_MINUTES = int(os.environ.get("CLAIMDESK_ABANDON_AFTER_MINUTES", "120"))
# A reviewer may reopen (undo) a submission for this long after making it, and never after:
# a rule that depends on nothing the co-reviewer or a lead does, so a refusal reveals nothing.
# A lead can open an answer for adjudication once its reviewers' windows have closed.
CLAIMDESK_REOPEN_MINUTES = float(os.environ.get("CLAIMDESK_REOPEN_MINUTES", "30"))

# Content-Security-Policy (django-csp): everything from our own origin, nothing inline. The
# templates carry no inline script, event handler or style (htmx's own indicator style is
# switched off in base.html; the heatmaps use classes; the SVG charts use presentation
# attributes, which CSP does not govern), so neither script-src nor style-src needs
# 'unsafe-inline'. /api/docs/ (Swagger UI) adds only data: images, in config.api_urls.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "font-src": [SELF],
        "connect-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [NONE],
        "object-src": [NONE],
    },
}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# Single sign-on: Chromium holds a form's redirects to form-action too, and the logout form
# leads to the provider's end-session endpoint (CLAIMDESK_OIDC_PROVIDER_LOGOUT). The "Sign in
# with" button is a link, which form-action does not govern, but its endpoint is the same
# provider's. Its origin: the endpoints' given ones, else the discovery document's.
if OIDC_RP_CLIENT_ID:
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"] += sorted(
        {
            _origin(url)
            for url in (
                OIDC_OP_DISCOVERY_URL,
                OIDC_OP_AUTHORIZATION_ENDPOINT,
                OIDC_OP_LOGOUT_ENDPOINT,
            )
            if url
        }
    )

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# HTTPS=true is the production switch: secure cookies, redirect to https, HSTS. It is a
# separate switch from DEBUG because a local docker-compose or a test server speaks plain http.
if env_bool("HTTPS"):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
