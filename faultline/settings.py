"""Faultline settings: every value comes from an environment variable listed in
.env.example, and the defaults run the embedded set-up (SQLite, local Redis)."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.core.exceptions import ImproperlyConfigured

from faultline.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FAULTLINE_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("FAULTLINE_DEBUG", False)
SECRET_KEY = env_str("FAULTLINE_SECRET_KEY", "dev-only-insecure-key-change-me-in-production")
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

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

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
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = "media/"

# Uploads: files are streamed to disk, never held whole in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
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

# Celery, configured from FAULTLINE_* variables (see faultline/celery.py for why).
FAULTLINE_CELERY_BROKER_URL = env_str("FAULTLINE_BROKER_URL", "redis://127.0.0.1:6379/0")
FAULTLINE_CELERY_RESULT_BACKEND = env_str("FAULTLINE_RESULT_BACKEND", "redis://127.0.0.1:6379/1")
FAULTLINE_CELERY_TASK_ALWAYS_EAGER = env_bool("FAULTLINE_TASKS_EAGER", False)
FAULTLINE_CELERY_TASK_EAGER_PROPAGATES = True
# Task results live in the database rows they write; nothing waits on a result.
FAULTLINE_CELERY_TASK_IGNORE_RESULT = True
FAULTLINE_CELERY_TASK_ACKS_LATE = True
FAULTLINE_CELERY_WORKER_PREFETCH_MULTIPLIER = 1
FAULTLINE_CELERY_TASK_SERIALIZER = "json"
FAULTLINE_CELERY_ACCEPT_CONTENT = ["json"]
FAULTLINE_CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FAULTLINE_LOG_LEVEL", "WARNING")},
}

# The cache carries live progress between the worker and the web server.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("FAULTLINE_CACHE_URL", "redis://127.0.0.1:6379/2"),
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    }
    if env_str("FAULTLINE_CACHE_URL", "redis://127.0.0.1:6379/2")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
