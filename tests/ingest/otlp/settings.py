"""Faultline's settings with the OTLP receiver's URLs, for tests that start real server
processes (until faultline/urls.py includes ingest.otlp.urls)."""

from __future__ import annotations

from faultline.settings import *  # noqa: F403

ROOT_URLCONF = "tests.ingest.otlp.urls"
