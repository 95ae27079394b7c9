"""Headless Debian Chromium driven by Playwright against pytest-django's live server.

Celery tasks run eagerly in the server thread (set on the Celery app's own conf, which
is what an already-configured app reads), so an upload is ingested and refreshed for
real while the page polls its status. On failure each test leaves a screenshot and the
page's errors in $FAULTLINE_TEST_ARTIFACTS (default ./test-artifacts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PASSWORD = "browser-pass-123"


def artifacts_dir() -> Path:
    path = Path(os.environ.get("FAULTLINE_TEST_ARTIFACTS", "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def eager_celery():
    from faultline.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


class PageErrors(list):
    """JavaScript exceptions and console errors a page logged."""


@pytest.fixture
def page(request, chromium, live_server, eager_celery) -> Iterator:
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    page.errors = errors
    page.base = live_server.url
    yield page
    failed = any(
        getattr(getattr(request.node, f"report_{when}", None), "failed", False)
        for when in ("setup", "call")
    )
    if failed:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
        page.screenshot(path=str(artifacts_dir() / f"{name}.png"), full_page=True)
        (artifacts_dir() / f"{name}.errors.txt").write_text("\n".join(errors) + "\n")
    context.close()


@pytest.fixture
def browser_user(django_user_model, project):
    from projects.models import Membership, Role

    user = django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    return user


@pytest.fixture
def unlabelled_rollout(project):
    """An unlabelled failed rollout of six steps (odd steps the Planner's, even
    WebSurfer's), attributed."""
    from attribution.services import project_attribution_refresh
    from tests.attribution.conftest import make_rollout, make_upload

    rollout = make_rollout(project, upload=make_upload(project), length=6, label=False)
    project_attribution_refresh(project_id=project.pk)
    return rollout


def log_in(page, user) -> None:
    page.goto(page.base + "/login/")
    page.fill("#id_username", user.get_username())
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/$"))


def wait_for_charts(page) -> int:
    """Wait until every plotly container on the page holds its SVG; return how many."""
    page.wait_for_function(
        "() => { const c = document.querySelectorAll('.chart[data-figure-id]');"
        " return c.length > 0 && Array.from(c).every(e => e.dataset.rendered === 'true'"
        " && e.querySelector('svg.main-svg')); }",
        timeout=20_000,
    )
    return page.locator(".chart[data-figure-id]").count()
