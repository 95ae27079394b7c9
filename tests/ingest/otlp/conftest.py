"""Fixtures for the OTLP receiver tests that run a live server."""

from __future__ import annotations

import pytest


@pytest.fixture
def eager_celery():
    """Tasks run in the caller's thread (the live server's): set on the app's own conf,
    which is what an already-configured Celery app reads."""
    from faultline.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved
