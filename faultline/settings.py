"""Faultline settings: every value comes from an environment variable listed in
.env.example, and the defaults run the embedded set-up (SQLite, local Redis)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import plotly
from csp.constants import NONE, SELF, UNSAFE_HASHES
from django.core.exceptions import ImproperlyConfigured

from faultline.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
    instance_env,
)
from faultline.secret_key import secret_key_from_file

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FAULTLINE_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("FAULTLINE_DEBUG", False)
# SECURITY: the key comes from FAULTLINE_SECRET_KEY, else from a file under var/ that
# `make run` (or the first process to start) writes with a random key, mode 600. Several
# machines must share one key: set FAULTLINE_SECRET_KEY (or FAULTLINE_SECRET_KEY_FILE).
SECRET_KEY = env_str("FAULTLINE_SECRET_KEY", "") or secret_key_from_file(
    Path(env_str("FAULTLINE_SECRET_KEY_FILE", "") or VAR_DIR / "secret_key")
)
ALLOWED_HOSTS = env_list("FAULTLINE_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("FAULTLINE_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # Faultline's apps, in layer order: each imports only those above it in this list
    # (import-linter contracts in pyproject.toml).
    "projects",
    "ingest",
    "attribution",
    "analysis",
    "exports",
    "pipeline",
    "dashboard",
]
INSTALLED_APPS += ["csp"]  # SECURITY: django-csp (Content-Security-Policy header)
INSTALLED_APPS += ["axes"]  # SECURITY: django-axes (failed log-in throttle); its own migrations

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # An upload over FAULTLINE_MAX_UPLOAD_BYTES: 413 from its Content-Length, unread.
    "dashboard.upload_limit.UploadLimitMiddleware",
    # A NUL in a page's query or form fields: 400 naming the field (PostgreSQL refuses it).
    "dashboard.nul_guard.NulGuardMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
MIDDLEWARE += ["csp.middleware.CSPMiddleware"]  # SECURITY: Content-Security-Policy
MIDDLEWARE += ["projects.security.TokenThrottleMiddleware"]  # SECURITY: bad API tokens: 429
MIDDLEWARE += ["dashboard.api.errors.ApiJsonErrorsMiddleware"]  # API errors are JSON
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # SECURITY: must stay last (django-axes)

ROOT_URLCONF = "faultline.urls"
WSGI_APPLICATION = "faultline.wsgi.application"

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

DATABASES = {
    "default": database_from_url(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'faultline.sqlite3'}"),
        base_dir=str(BASE_DIR),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:project_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# plotly.js is served from the pinned plotly package itself (static/vendor/plotly.min.js),
# so the browser never reaches a CDN and the repository holds no 4.8 MB copy.
PLOTLY_JS_DIR = Path(plotly.__file__).resolve().parent / "package_data"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor", str(PLOTLY_JS_DIR))]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# WhiteNoise serves static files from the app server in every mode (no CDN, no nginx needed).
# `make run` collects them into var/staticfiles first, gzipped (plotly.min.js: 4.8 MB ->
# about 1.4 MB on the wire), and says so with FAULTLINE_STATIC_COLLECTED=true; otherwise
# (tests, a bare manage.py) they are served straight from the source folders, never stale.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = not env_bool("FAULTLINE_STATIC_COLLECTED", False)
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = "media/"

# Uploads: files are streamed to disk, never held whole in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Larger request bodies are spooled under the var dir, not the system's /tmp: a web
# process killed mid-upload leaves its part there, where `make run` clears it at start.
(VAR_DIR / "tmp" / "uploads").mkdir(parents=True, exist_ok=True)
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "tmp" / "uploads")
FAULTLINE_MAX_UPLOAD_BYTES = env_int("FAULTLINE_MAX_UPLOAD_BYTES", 2 * 1024**3, minimum=1)
FAULTLINE_MAX_DOCUMENT_BYTES = env_int("FAULTLINE_MAX_DOCUMENT_BYTES", 256 * 1024**2, minimum=1)
FAULTLINE_MAX_ARCHIVE_BYTES = env_int("FAULTLINE_MAX_ARCHIVE_BYTES", 2 * 1024**3, minimum=1)
FAULTLINE_INGEST_BATCH_STEPS = env_int("FAULTLINE_INGEST_BATCH_STEPS", 5000, minimum=1)

# Attribution: the conformal miscoverage alpha a new project starts with (projects.models).
FAULTLINE_ALPHA = env_float("FAULTLINE_ALPHA", 0.1)
if not 0.01 <= FAULTLINE_ALPHA <= 0.5:
    raise ImproperlyConfigured(
        f"FAULTLINE_ALPHA={FAULTLINE_ALPHA}: give a miscoverage from 0.01 to 0.5 (0.1 = 90% sets)."
    )
# Analysis embeddings: "wordllama" (the static sentence-embedding model shipped inside the
# wordllama package), "tfidf" (the TF-IDF + SVD fallback) or "minilm" (needs extra packages).
FAULTLINE_EMBEDDINGS = env_choice(
    "FAULTLINE_EMBEDDINGS", "wordllama", ("wordllama", "tfidf", "minilm")
)
# Cluster every step of failed rollouts, not only the wrong ones (labelled, in a
# prediction set, or carrying an error signal).
FAULTLINE_CLUSTER_ALL_FAILED_STEPS = env_bool("FAULTLINE_CLUSTER_ALL_FAILED_STEPS", False)
# Optional LLM judge (OpenAI-compatible); empty URL means not used.
FAULTLINE_JUDGE_URL = env_str("FAULTLINE_JUDGE_URL", "")
FAULTLINE_JUDGE_MODEL = env_str("FAULTLINE_JUDGE_MODEL", "")
FAULTLINE_JUDGE_KEY = env_str("FAULTLINE_JUDGE_KEY", "")
FAULTLINE_JUDGE_TIMEOUT = env_float("FAULTLINE_JUDGE_TIMEOUT", 30.0)

# Celery, configured from FAULTLINE_* variables (see faultline/celery.py for why). Without
# URLs, those the `make run` of this var dir uses (faultline.env.instance_env: a CLI run
# with only FAULTLINE_VAR_DIR beside a `make run` on other ports stored every file as
# queued, unsent), else the local redis-server on FAULTLINE_REDIS_PORT.
LOCAL_REDIS = f"redis://127.0.0.1:{env_int('FAULTLINE_REDIS_PORT', 6379, minimum=1)}"
INSTANCE = instance_env(VAR_DIR)
FAULTLINE_CELERY_BROKER_URL = env_str(
    "FAULTLINE_BROKER_URL", INSTANCE.get("FAULTLINE_BROKER_URL", f"{LOCAL_REDIS}/0")
)
FAULTLINE_CELERY_RESULT_BACKEND = env_str(
    "FAULTLINE_RESULT_BACKEND", INSTANCE.get("FAULTLINE_RESULT_BACKEND", f"{LOCAL_REDIS}/1")
)
FAULTLINE_CELERY_TASK_ALWAYS_EAGER = env_bool("FAULTLINE_TASKS_EAGER", False)
FAULTLINE_CELERY_TASK_EAGER_PROPAGATES = True
# Task results live in the database rows they write; nothing waits on a result.
FAULTLINE_CELERY_TASK_IGNORE_RESULT = True
FAULTLINE_CELERY_TASK_ACKS_LATE = True
FAULTLINE_CELERY_WORKER_PREFETCH_MULTIPLIER = 1
FAULTLINE_CELERY_TASK_SERIALIZER = "json"
FAULTLINE_CELERY_ACCEPT_CONTENT = ["json"]
FAULTLINE_CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A pool process that dies (SIGKILL, out of memory) hands its message back instead of
# acknowledging it, so the job is delivered again and its claim takes it over.
FAULTLINE_CELERY_TASK_REJECT_ON_WORKER_LOST = True
# With the broker down, sending a task gives up within a second or two: the job row stays
# queued and the sweeper sends it later; the request answers at once.
FAULTLINE_CELERY_BROKER_CONNECTION_TIMEOUT = 2
# A broker that takes the connection and never answers (a frozen or swapped-out Redis)
# must not hold a request either: each read or write on its socket gives up after
# socket_timeout (a trial's upload waited 141 s, until Redis ran again). A worker's
# BRPOP polls for 1 s, well inside it.
FAULTLINE_CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 5, "socket_connect_timeout": 2}
FAULTLINE_CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}

# Jobs (ingest.jobs, pipeline.jobs): Celery beat runs the sweeper every
# FAULTLINE_SWEEP_INTERVAL_S. A running job whose worker's processes are gone is queued
# again at once (pipeline.runners: by a worker starting on that machine, or the sweep); one
# silent for FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S (a hung worker, a machine gone) is queued
# again too, at most FAULTLINE_JOB_MAX_REAPS times in all, then failed with the reason. The
# timeout is long because a refresh's row beats only between stages, and its attribution
# and clustering stages take minutes on a large project. A queued job never sent is sent
# once older than FAULTLINE_JOB_SWEEP_GRACE_S, and one sent longer than
# FAULTLINE_JOB_LOST_AFTER_S ago and still queued is sent again.
FAULTLINE_SWEEP_INTERVAL_S = env_float("FAULTLINE_SWEEP_INTERVAL_S", 60.0)
FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S = env_float("FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S", 900.0)
FAULTLINE_JOB_MAX_REAPS = env_int("FAULTLINE_JOB_MAX_REAPS", 2, minimum=0)
FAULTLINE_JOB_SWEEP_GRACE_S = env_float("FAULTLINE_JOB_SWEEP_GRACE_S", 30.0)
FAULTLINE_JOB_LOST_AFTER_S = env_float("FAULTLINE_JOB_LOST_AFTER_S", 1800.0)
# Celery's scheduler, except that a task beat cannot send while the broker is down is one
# line in its log, not a traceback at every tick (faultline/beat.py).
FAULTLINE_CELERY_BEAT_SCHEDULER = "faultline.beat:Scheduler"
FAULTLINE_CELERY_BEAT_SCHEDULE = {
    "faultline-jobs-sweep": {
        "task": "pipeline.tasks.jobs_sweep",
        "schedule": FAULTLINE_SWEEP_INTERVAL_S,
        "options": {"queue": "celery", "expires": FAULTLINE_SWEEP_INTERVAL_S},
    },
    # OTLP live traces: close the quiet ones, assemble those whose task was lost.
    "faultline-otlp-close-quiet-traces": {
        "task": "pipeline.tasks.close_quiet_traces",
        "schedule": env_float("FAULTLINE_OTLP_CLOSE_INTERVAL_S", 10.0),
        "options": {"queue": "celery", "expires": 10.0},
    },
}

# OTLP receiver back-pressure (ingest/otlp/config.py has the receiver's other settings):
# at FAULTLINE_OTLP_MAX_PENDING_SPANS spans stored but not yet assembled for a project,
# POST /v1/traces answers 429 with Retry-After; a write that waits longer than
# FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS for a database lock answers 503. Both are retried
# by OpenTelemetry exporters (a 500 is not).
FAULTLINE_OTLP_MAX_PENDING_SPANS = env_int("FAULTLINE_OTLP_MAX_PENDING_SPANS", 100_000, minimum=1)
FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS = env_float("FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS", 2.0)
# Closed live traces are analysed (attribution, misbehaviours) this long after the first
# of them closed, together with every trace that closed meanwhile (pipeline.live).
FAULTLINE_STREAM_REFRESH_DELAY_S = env_float("FAULTLINE_STREAM_REFRESH_DELAY_S", 10.0)

# SECURITY ------------------------------------------------------------------------------
# Headers on every response; cookies and HSTS only when the site is served over HTTPS
# (FAULTLINE_HTTPS=true), because a Secure cookie is never sent back over plain HTTP.
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
FAULTLINE_HTTPS = env_bool("FAULTLINE_HTTPS", False)
SESSION_COOKIE_SECURE = FAULTLINE_HTTPS
CSRF_COOKIE_SECURE = FAULTLINE_HTTPS
SECURE_SSL_REDIRECT = FAULTLINE_HTTPS
SECURE_HSTS_SECONDS = (
    env_int("FAULTLINE_HSTS_SECONDS", 31536000, minimum=0) if FAULTLINE_HTTPS else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("FAULTLINE_HSTS_INCLUDE_SUBDOMAINS", True)
# The preload flag alone submits nothing: a site joins the browsers' list only when its
# owner applies at hstspreload.org. Set it false for a domain with HTTP-only subdomains.
SECURE_HSTS_PRELOAD = env_bool("FAULTLINE_HSTS_PRELOAD", True)
# Behind one TLS-terminating proxy that sets X-Forwarded-Proto and appends the client to
# X-Forwarded-For (and never passes either header through from the client).
FAULTLINE_BEHIND_PROXY = env_bool("FAULTLINE_BEHIND_PROXY", False)
if FAULTLINE_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp 4): no inline script or style of ours anywhere; every
# script and stylesheet is a file under static/. What plotly.js (the pinned plotly.min.js)
# still does at run time was measured in Chromium (tests/browser/test_csp_in_chromium.py)
# and is allowed by exact hashes, never by 'unsafe-inline':
# - it creates an empty <style> element and fills it through CSSOM insertRule (not subject
#   to the CSP): the hash of the empty string;
# - it injects the CSS of its bundled maplibre (map traces) as one <style> at load time;
# - it sets one style attribute (image-rendering: pixelated...) on heatmap images so cells
#   stay crisp: 'unsafe-hashes' with that attribute's exact hash;
# - its heatmap cells are drawn into a data: URI image: img-src data: (images run no code).
# tests/faultline/test_csp.py recomputes these hashes from the installed plotly.min.js, so
# a plotly upgrade that changes them fails there with the new values. WebGL traces
# (scattergl, on the misbehaviour map only) compile shaders with new Function(): that one
# view adds 'unsafe-eval' (projects.security.PLOTLY_WEBGL_CSP); no other page has it.
PLOTLY_STYLE_HASHES = [
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",  # "" (empty <style>/attribute)
    "'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o='",  # bundled maplibre CSS
    "'sha256-AR/cKIZjWPcPmBUPDA6oti9XBiTbJvz0Cro2J1VzzS8='",  # heatmap image-rendering
]
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_HASHES, *PLOTLY_STYLE_HASHES],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Failed log-ins (django-axes): after FAULTLINE_LOGIN_FAILURE_LIMIT failures for one
# username from one address, that pair is refused (429, MSG_LOGIN_LOCKED in
# projects/security.py) even with the right password, until the cool-off has passed.
# Keyed on username and address together, so a stranger cannot lock a user out everywhere.
AUTHENTICATION_BACKENDS = [
    "projects.security.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("FAULTLINE_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("FAULTLINE_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "projects.security.login_lockout_response"
# One rule for "which client is this" for log-ins and tokens (see client_address).
AXES_CLIENT_IP_CALLABLE = "projects.security.client_address"

# Failed API-token uses (projects.security.TokenThrottleMiddleware, counted in the cache).
FAULTLINE_API_PREFIX = "/api/"
FAULTLINE_TOKEN_FAILURE_LIMIT = env_int("FAULTLINE_TOKEN_FAILURE_LIMIT", 10, minimum=1)
FAULTLINE_TOKEN_COOLOFF_SECONDS = env_int("FAULTLINE_TOKEN_COOLOFF_SECONDS", 900, minimum=1)
# END SECURITY --------------------------------------------------------------------------

# One line format for the web, the worker and beat: a timestamp (date and time as ISO 8601
# writes them, in UTC: TIME_ZONE sets the clock), the level, the process and the logger.
# Django's handler below writes it in the web and in manage.py; in the worker and in beat
# Celery replaces the root handler with its own, which the same strings configure
# (FAULTLINE_CELERY_WORKER_LOG_FORMAT below; Celery's default has no logger name).
LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(name)s: %(message)s"
LOG_TASK_FORMAT = (
    "[%(asctime)s: %(levelname)s/%(processName)s] %(task_name)s[%(task_id)s]: %(message)s"
)
FAULTLINE_CELERY_WORKER_LOG_FORMAT = LOG_FORMAT
FAULTLINE_CELERY_WORKER_TASK_LOG_FORMAT = LOG_TASK_FORMAT
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"line": {"format": LOG_FORMAT}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "line"}},
    "root": {"handlers": ["console"], "level": env_str("FAULTLINE_LOG_LEVEL", "WARNING")},
}

# The cache carries live progress between the worker and the web server.
CACHE_URL = env_str("FAULTLINE_CACHE_URL", INSTANCE.get("FAULTLINE_CACHE_URL", f"{LOCAL_REDIS}/2"))
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    }
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
