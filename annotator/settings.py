"""Blindspot settings: the only module that reads the environment (and the ``.env`` file).

Every value comes from an environment variable (or ``.env``) with a safe default for a laptop demo; with
``DEBUG`` off the defaults turn production-safe (secure cookies, explicit hosts, a real secret).
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

from annotator import task_names as names

BASE_DIR = Path(__file__).resolve().parent.parent

# A ``.env`` beside manage.py (``bin/demo`` writes one) fills in what the environment leaves unset;
# a variable set in the environment always wins (override=False). BLINDSPOT_ENV_FILE names another
# file, or "" for none: the test suite sets "" so a developer's .env cannot change its results.
ENV_FILE = os.environ.get("BLINDSPOT_ENV_FILE", str(BASE_DIR / ".env"))
if ENV_FILE:
    if "BLINDSPOT_ENV_FILE" in os.environ and not Path(ENV_FILE).is_file():
        raise ImproperlyConfigured(f"BLINDSPOT_ENV_FILE names {ENV_FILE}, which is not a file.")
    load_dotenv(ENV_FILE, override=False)
VAR_DIR = Path(os.environ.get("BLINDSPOT_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    return [x.strip() for x in raw.split(",") if x.strip()] if raw else default


DEBUG = env_bool("DEBUG", False)
_DEV_SECRET = "insecure-dev-only-secret-key-change-me"
# Empty when DEBUG is off and none is given: the system check ``blindspot.E001`` then stops the
# server and every database command, while batch commands (detect, evaluate) still work.
SECRET_KEY = os.environ.get("SECRET_KEY") or (_DEV_SECRET if DEBUG else "")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "annotator.apps.BlindspotAdminConfig",  # the Django admin, for superusers only
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "csp",
    "ninja",  # the API's browsable page (/api/v1/docs/) with its own static files, no CDN
    "annotator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The policy on every response: above WhiteNoise, which answers static files itself.
    "annotator.middleware.PolicyEverywhereMiddleware",
    # Serves collected static files under gunicorn (DEBUG off), where nothing else would.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # a job queued while the broker is away: say so, and send it again when it is back
    "annotator.middleware.BrokerAwayMiddleware",
    # a page's cached figures share one read of the project's revision
    "annotator.middleware.OneRevisionMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "annotator.urls"
WSGI_APPLICATION = "annotator.wsgi.application"

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
            ],
        },
    }
]

# Connections must not run away: persistent connections (CONN_MAX_AGE > 0) stay open in every
# thread that ever queried, and the threaded dev server and in-process jobs start a thread per
# request or job, which once exhausted PostgreSQL's 100 connections. So connections close after
# each request or job (CONN_MAX_AGE 0) and, on PostgreSQL, come from psycopg's pool, which caps
# them at DB_POOL_MAX_SIZE per process (Django requires CONN_MAX_AGE 0 with a pool).
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'blindspot.sqlite3'}",
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASES["default"]["NAME"] not in ("", ":memory:"):  # `migrate` on a fresh clone needs var/
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_POOL", True):
    if DATABASES["default"]["CONN_MAX_AGE"]:
        raise ImproperlyConfigured("DB_CONN_MAX_AGE must be 0 with DB_POOL on (the pool keeps the connections)")
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 1),
        "max_size": env_int("DB_POOL_MAX_SIZE", 10),
        "timeout": env_int("DB_POOL_TIMEOUT", 30),  # seconds a request waits for a free connection
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},  # 12345678, password1…
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project-list"
LOGOUT_REDIRECT_URL = "login"
# Login throttling (annotator/services/accounts.py): this many failed logins for one account, or
# from one client address, lock it out for the window; counted in the default cache.
BLINDSPOT_LOGIN_MAX_FAILURES = env_int("BLINDSPOT_LOGIN_MAX_FAILURES", 5)
BLINDSPOT_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("BLINDSPOT_LOGIN_MAX_FAILURES_PER_ADDRESS", 20)
BLINDSPOT_LOGIN_LOCKOUT_SECONDS = env_int("BLINDSPOT_LOGIN_LOCKOUT_SECONDS", 15 * 60)
# Behind a reverse proxy the client address is the proxy's last X-Forwarded-For hop.
BLINDSPOT_TRUST_X_FORWARDED_FOR = env_bool("BEHIND_PROXY", False)
# Invitations (annotator/services/invitations.py): a link works once, for this many days. They are
# e-mailed through SMTP when EMAIL_HOST is set; otherwise the mail is printed to the console.
BLINDSPOT_INVITATION_DAYS = env_int("BLINDSPOT_INVITATION_DAYS", 7)
# The HTTP API (docs/api.md): requests per token, as COUNT/PERIOD (s, m, h or d); more answer 429.
BLINDSPOT_API_RATE = os.environ.get("BLINDSPOT_API_RATE", "600/m")
# Invalid API tokens one client address may send per window before all its API requests are refused
BLINDSPOT_API_FAILURES_PER_ADDRESS = env_int("BLINDSPOT_API_FAILURES_PER_ADDRESS", 60)
BLINDSPOT_API_FAILURE_WINDOW_SECONDS = env_int("BLINDSPOT_API_FAILURE_WINDOW_SECONDS", 300)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = ("django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                 else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "blindspot@localhost")

# OpenID Connect login (optional; mozilla-django-oidc; docs/deploy.md): on when OIDC_RP_CLIENT_ID is
# set, and then the provider's endpoints must be set too. Someone who logs in this way for the first
# time gets an account with no role: a project admin invites them or adds them on the People page.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
BLINDSPOT_OIDC = bool(OIDC_RP_CLIENT_ID)
if BLINDSPOT_OIDC:
    OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
    _oidc_needed = ["OIDC_RP_CLIENT_SECRET", "OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT",
                    "OIDC_OP_USER_ENDPOINT"] + (["OIDC_OP_JWKS_ENDPOINT"] if OIDC_RP_SIGN_ALGO[:2] in ("RS", "ES") else [])
    _oidc_missing = [name for name in _oidc_needed if not os.environ.get(name)]
    if _oidc_missing:
        raise ImproperlyConfigured(f"OIDC_RP_CLIENT_ID is set, so OIDC login needs {', '.join(_oidc_missing)} too.")
    OIDC_RP_CLIENT_SECRET = os.environ["OIDC_RP_CLIENT_SECRET"]
    OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ["OIDC_OP_AUTHORIZATION_ENDPOINT"]
    OIDC_OP_TOKEN_ENDPOINT = os.environ["OIDC_OP_TOKEN_ENDPOINT"]
    OIDC_OP_USER_ENDPOINT = os.environ["OIDC_OP_USER_ENDPOINT"]
    OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
    OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
    OIDC_REQUIRE_VERIFIED_EMAIL = env_bool("OIDC_REQUIRE_VERIFIED_EMAIL", True)
    OIDC_USERNAME_ALGO = "annotator.services.accounts.oidc_username"
    LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
    AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend",
                               "annotator.services.accounts.OIDCBackend"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Collected into the image at build time (Dockerfile), apart from BLINDSPOT_VAR_DIR's data volume.
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or VAR_DIR / "staticfiles")

# Production-safe defaults when DEBUG is off.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# HTTPS only when DEBUG is off; with the variables of .env.example (README, "Production")
# `manage.py check --deploy` reports nothing. HSTS for subdomains and preloading bind the whole
# domain, so the operator opts in (docker-compose does).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
if env_bool("BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content Security Policy on every response, DEBUG or not (django-csp). No inline script, style
# or handler anywhere: scripts and styles are static files, label colours come from a per-project
# stylesheet (annotator.views.styles), and htmx's own inline indicator style is off (see base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Celery: with no broker configured, tasks run in-process so the demo needs neither Redis nor a worker.
REDIS_URL = os.environ.get("REDIS_URL", "")
# An eager task still takes a producer from the broker's pool; "memory://" names no host, and kombu
# then warns "No hostname was supplied. Reverting to default 'localhost'" on every command that
# queues one (build_release, run_detector). The in-memory transport ignores the host: name it.
IN_PROCESS_BROKER = "memory://localhost/"
CELERY_BROKER_URL = REDIS_URL or IN_PROCESS_BROKER
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# The queue tasks are sent to, by web processes and by workers alike (a release's job queues its
# chunks from a worker); tests give their workers a queue of their own.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
                                   "socket_connect_timeout": 1.0}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# a request that queues a job while Redis is away answers within about a second (annotator/dispatch.py)
CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2,
                                    "interval_max": 0.2}
BLINDSPOT_EAGER_IN_THREAD = env_bool("BLINDSPOT_EAGER_IN_THREAD", True)
# `celery beat` (docker compose runs it) sweeps finished items that a failed merge left out of gold.
BLINDSPOT_MERGE_SWEEP_SECONDS = env_int("BLINDSPOT_MERGE_SWEEP_SECONDS", 300)
BLINDSPOT_REDISPATCH_SECONDS = env_int("BLINDSPOT_REDISPATCH_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    # tasks the broker did not take while it was away (annotator/dispatch.py), sent again
    "redispatch-undelivered": {"task": names.BROKER_REDISPATCH,
                               "schedule": float(BLINDSPOT_REDISPATCH_SECONDS)},
    # finished items a failed merge left out of gold (annotator/tasks/adjudication.py)
    "gold-merge-sweep": {"task": names.ADJUDICATION_GOLD_MERGE_SWEEP,
                         "schedule": float(BLINDSPOT_MERGE_SWEEP_SECONDS)},
}

# The cache carries live progress out of long transactions (an import is one transaction, so its
# progress cannot be read from the database until it commits).
CACHES = {
    "default": (
        # pages answer while Redis is away (annotator/cache.py); short timeouts keep them fast then
        {"BACKEND": "annotator.cache.DegradingRedisCache", "LOCATION": REDIS_URL,
         "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0}}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Blindspot
BLINDSPOT_SURROGATE_KEY = os.environ.get("BLINDSPOT_SURROGATE_KEY") or (SECRET_KEY if DEBUG else "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
BLINDSPOT_LLM_MODEL = os.environ.get("BLINDSPOT_LLM_MODEL", "gpt-4o-mini")


def llm_endpoints(raw: str) -> dict[str, dict[str, str]]:
    """``BLINDSPOT_LLM_ENDPOINTS``: the endpoints besides OPENAI_BASE_URL that an llm run may choose
    by name, each with its own key: ``{"local": {"base_url": "http://vllm:8000/v1", "api_key": ""}}``.
    Whoever deploys sets them; a run config names one and never carries a URL or a key."""
    if not raw:
        return {}
    try:
        table = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"BLINDSPOT_LLM_ENDPOINTS is not valid JSON: {exc.msg}") from None
    if not isinstance(table, dict):
        raise ImproperlyConfigured("BLINDSPOT_LLM_ENDPOINTS must be a JSON object of named endpoints")
    for name, endpoint in table.items():
        if name == "default" or not isinstance(endpoint, dict) or set(endpoint) - {"base_url", "api_key"} \
                or not str(endpoint.get("base_url", "")).startswith(("http://", "https://")):
            raise ImproperlyConfigured(
                f"BLINDSPOT_LLM_ENDPOINTS[{name!r}] must be {{\"base_url\": \"http(s)://…\", \"api_key\": \"…\"}} "
                "(\"default\" is OPENAI_BASE_URL's)")
    return {name: {"base_url": e["base_url"], "api_key": str(e.get("api_key") or "")} for name, e in table.items()}


BLINDSPOT_LLM_ENDPOINTS = llm_endpoints(os.environ.get("BLINDSPOT_LLM_ENDPOINTS", ""))


def networks(name: str, raw: list[str]) -> list[str]:
    """A list of CIDR networks (``10.0.0.0/8,fd00::/8``), each checked here, so a typo stops the
    process at start instead of opening or closing a network silently."""
    for cidr in raw:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {cidr!r} is not a network like 10.0.0.0/8 or 127.0.0.1/32") from None
    return raw


# Webhooks (docs/webhooks.md) go to URLs a project admin chooses, so like an LLM endpoint's URL
# (which only the deployment sets) anything not on the public internet is the deployment's call:
# a delivery to a loopback, private, link-local, multicast, reserved or cloud-metadata address
# (169.254.169.254, fd00:ec2::254) is refused unless its address is in one of these networks.
BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = networks(
    "BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS", env_list("BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS", []))
# a failed delivery is tried again after this many seconds, doubled each time (six attempts in all)
BLINDSPOT_WEBHOOK_BACKOFF_SECONDS = env_int("BLINDSPOT_WEBHOOK_BACKOFF_SECONDS", 30)
BLINDSPOT_MODELS_DIR = Path(os.environ.get("BLINDSPOT_MODELS_DIR", VAR_DIR / "models"))
BLINDSPOT_EXPORTS_DIR = Path(os.environ.get("BLINDSPOT_EXPORTS_DIR", VAR_DIR / "exports"))
BLINDSPOT_UPLOADS_DIR = Path(os.environ.get("BLINDSPOT_UPLOADS_DIR", VAR_DIR / "uploads"))
# Export and release bundles, trained tagger versions and uploaded corpora go through Django's
# storage API (annotator/storage.py, the "exports", "models" and "uploads" aliases of STORAGES). By
# default they are the three local directories above. BLINDSPOT_STORAGE_URL=s3://bucket/prefix?endpoint_url=http://minio:9000
# puts them in any S3-compatible object store (django-storages), so workers on other machines need
# no shared disk: BLINDSPOT_MODELS_DIR is then each machine's local cache of model versions, and
# bundles are built under BLINDSPOT_STAGING_DIR before they are uploaded. Credentials:
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else boto3's usual chain (instance role, ~/.aws).
BLINDSPOT_STORAGE_URL = os.environ.get("BLINDSPOT_STORAGE_URL", "")
BLINDSPOT_STAGING_DIR = Path(os.environ.get("BLINDSPOT_STAGING_DIR", VAR_DIR / "staging"))
S3_URL_OPTIONS = ("endpoint_url", "region_name", "addressing_style", "signature_version", "verify")


def object_storages(url: str, *, access_key: str = "", secret_key: str = "") -> dict[str, dict]:
    """The ``exports``, ``models`` and ``uploads`` entries of STORAGES for a storage URL ("" = the
    local directories)."""
    if not url:
        return {alias: {"BACKEND": "annotator.storage.LocalDirStorage", "OPTIONS": {"setting": setting}}
                for alias, setting in (("exports", "BLINDSPOT_EXPORTS_DIR"), ("models", "BLINDSPOT_MODELS_DIR"),
                                       ("uploads", "BLINDSPOT_UPLOADS_DIR"))}
    parsed = urlsplit(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ImproperlyConfigured(f"BLINDSPOT_STORAGE_URL must look like s3://bucket/prefix?endpoint_url=..., got {url!r}")
    query = dict(parse_qsl(parsed.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(S3_URL_OPTIONS))
    if unknown:
        raise ImproperlyConfigured(f"BLINDSPOT_STORAGE_URL: unknown option(s) {', '.join(unknown)}; "
                                   f"known: {', '.join(S3_URL_OPTIONS)}")
    if "verify" in query:  # "false", or a CA bundle's path
        query["verify"] = False if query["verify"].lower() in ("0", "false", "no", "off") else query["verify"]
    options = {"bucket_name": parsed.netloc, "file_overwrite": True, "default_acl": None, **query}
    if access_key or secret_key:
        options.update(access_key=access_key, secret_key=secret_key)
    prefix = parsed.path.strip("/")
    return {alias: {"BACKEND": "storages.backends.s3.S3Storage",
                    "OPTIONS": {**options, "location": f"{prefix}/{alias}".strip("/")}}
            for alias in ("exports", "models", "uploads")}


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    **object_storages(BLINDSPOT_STORAGE_URL, access_key=os.environ.get("AWS_ACCESS_KEY_ID", ""),
                      secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "")),
}
BLINDSPOT_TAGGER_BASE = os.environ.get("BLINDSPOT_TAGGER_BASE", "")  # a local HF checkpoint path
# Export and verify every trained tagger version to ONNX as training's last step ("0": skip it).
BLINDSPOT_TAGGER_ONNX = os.environ.get("BLINDSPOT_TAGGER_ONNX", "1") != "0"
# Fields of TrainConfig overriding the automatic student's recipe (STUDENT_DEFAULTS); empty: the
# measured recipe. Not read from the environment: tests set a tiny one.
BLINDSPOT_TAGGER_STUDENT: dict = {}
BLINDSPOT_IMPORT_MAX_BYTES = env_int("BLINDSPOT_IMPORT_MAX_BYTES", 512 * 1024 * 1024)
# Dialogues an import reads, checks and writes at a time (one transaction for the whole file): what
# bounds the import worker's memory, whatever the file's size.
BLINDSPOT_IMPORT_BATCH_DIALOGUES = env_int("BLINDSPOT_IMPORT_BATCH_DIALOGUES", 1000)
# Extra modules that register detectors with pipeline.registry (third-party or site-specific).
BLINDSPOT_DETECTOR_PLUGINS = env_list("BLINDSPOT_DETECTOR_PLUGINS", [])
# Celery workers (containers, or separate `celery worker` commands) that share this host's cores.
# A worker cannot see the others, so it gives each task cores / (this x its concurrency) inference
# threads (annotator.celery) unless OMP_NUM_THREADS is set; docker-compose.yml passes its
# BLINDSPOT_WORKERS here.
BLINDSPOT_HOST_WORKERS = max(1, env_int("BLINDSPOT_HOST_WORKERS", 1))
# A run's chunk (one task any worker may take) closes at whichever comes first: this many messages
# (the tagger's own sweep, pipeline.parallel.CHUNK_MESSAGES) or this many dialogues. Sized by
# messages, a corpus of short exchanges (two messages a dialogue) no longer makes chunks of 100
# messages whose fixed cost (task, locks, writes) outweighs the detection.
BLINDSPOT_RUN_CHUNK_MESSAGES = env_int("BLINDSPOT_RUN_CHUNK_MESSAGES", 1024)
BLINDSPOT_RUN_CHUNK_DIALOGUES = env_int("BLINDSPOT_RUN_CHUNK_DIALOGUES", 1000)
# Dialogues per chunk of a release's second opinion, each chunk a task any worker may take
# (annotator/services/release_chunks.py); a release of no more dialogues stays one job.
BLINDSPOT_RELEASE_CHUNK_DIALOGUES = env_int("BLINDSPOT_RELEASE_CHUNK_DIALOGUES", 200)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
