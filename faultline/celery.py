"""The Celery app. The broker is read from FAULTLINE_BROKER_URL, not CELERY_BROKER_URL,
because Celery would let the latter override a test's configuration behind our back."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")

app = Celery("faultline")
app.config_from_object("django.conf:settings", namespace="FAULTLINE_CELERY")
app.autodiscover_tasks()
