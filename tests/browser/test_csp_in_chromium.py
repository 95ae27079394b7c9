"""Every main page in Chromium under the real Content-Security-Policy: no violation, no
console error, and the plotly charts still draw their SVG."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import log_in, wait_for_charts
from tests.conftest import ingest_file, shared_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Registered before any page script runs; Playwright's init scripts are not subject to the
# page's CSP, so the listener sees every violation the page's own content causes.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline")
    + " (" + e.sample + ") at " + (e.sourceFile || "") + ":" + e.lineNumber);
});
"""


def _demo(project) -> None:
    """tau-bench airline and a few Who&When runs, attributed and clustered for real."""
    from pipeline.tasks import refresh_project

    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    for name in ("1", "2", "3", "4", "5", "6"):
        ingest_file(project, shared_file(f"who_and_when/Who&When/Hand-Crafted/{name}.json"))
    refresh_project(project.pk)


def _exports(project) -> None:
    """One finished export and one left queued, so the exports page draws progress bars
    from data-percent and polls the unfinished job (static/js/exports.js)."""
    from exports.core.filters import parse_filters
    from exports.services import export_create, export_run

    done = export_create(project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False)
    export_run(job_id=done.pk)
    export_create(project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False)


def _main_pages(project) -> list[tuple[str, bool]]:
    """(path, has charts) for every main page, with real rows behind the detail pages."""
    slug = project.slug
    failed = project.trajectories.filter(outcome="failure").order_by("pk").first()
    task_rollout = project.trajectories.filter(external_id="airline-task1-trial0").first()
    pages = [
        (reverse("dashboard:project_list"), False),
        (reverse("dashboard:project_detail", args=[slug]), True),
        (reverse("dashboard:rollout_list", args=[slug]), False),
        (reverse("dashboard:rollout_detail", args=[slug, failed.pk]), True),
        (reverse("dashboard:uploads", args=[slug]), False),
        (reverse("dashboard:project_settings", args=[slug]), False),
        (reverse("analysis:misbehaviour_list", args=[slug]), False),
        (reverse("analysis:misbehaviour_map", args=[slug]), False),
        (reverse("analysis:taxonomy", args=[slug]), False),
        (reverse("attribution:calibration", args=[slug]), False),
        (reverse("exports:index", args=[slug]), False),
        (reverse("password_change"), False),
    ]
    if task_rollout is not None:
        pages.append((reverse("dashboard:rollout_compare", args=[slug, task_rollout.pk]), False))
    misbehaviour = project.misbehaviours.order_by("pk").first()
    if misbehaviour is not None:
        pages.append((reverse("analysis:misbehaviour_detail", args=[slug, misbehaviour.pk]), False))
    return pages


def _violations(page) -> list[str]:
    return page.evaluate("() => window.__cspViolations || []")


def test_it_sends_the_policy_and_the_login_page_breaks_none_of_it(page):
    page.context.add_init_script(RECORD_VIOLATIONS)
    response = page.goto(page.base + "/login/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    assert _violations(page) == []
    assert page.errors == []


def test_it_shows_every_main_page_without_a_csp_violation_or_console_error(
    page, browser_user, project
):
    _demo(project)
    _exports(project)
    page.context.add_init_script(RECORD_VIOLATIONS)
    log_in(page, browser_user)
    seen: dict[str, list[str]] = {}
    for path, has_charts in _main_pages(project):
        response = page.goto(page.base + path)
        assert response.status == 200, path
        assert "content-security-policy" in response.headers, path
        page.wait_for_load_state("load")
        if has_charts or page.locator(".chart[data-figure-id]").count():
            wait_for_charts(page)
        seen[path] = _violations(page)
    assert {path: found for path, found in seen.items() if found} == {}
    assert page.errors == []


def test_it_draws_the_plotly_charts_under_the_policy(page, browser_user, project):
    _demo(project)
    page.context.add_init_script(RECORD_VIOLATIONS)
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/")
    rendered = wait_for_charts(page)
    assert rendered >= 4
    assert page.locator(".chart svg.main-svg").count() >= rendered
    assert _violations(page) == []
    # plotly.js 4 adds "Share chart..." by default, which uploads the figure to Plotly
    # Cloud: no chart offers it, and none knows a server to send to.
    page.locator(".chart").first.hover()
    assert page.locator(".modebar-btn").count() > 0
    assert page.locator('.modebar-btn[data-title^="Share chart"]').count() == 0
    servers = page.evaluate(
        "Array.from(document.querySelectorAll('.chart.js-plotly-plot'))"
        ".map(gd => [gd._context.showSendToCloud, gd._context.plotlyServerURL])"
    )
    assert servers and all(server == [False, ""] for server in servers)


def test_it_draws_progress_bars_without_inline_style(page, browser_user, project):
    _demo(project)
    _exports(project)
    page.context.add_init_script(RECORD_VIOLATIONS)
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/exports/")
    widths = page.locator("tr[data-job] .progress .bar").evaluate_all(
        "bars => bars.map(b => b.style.width)"
    )
    assert sorted(widths) == ["0%", "100%"]
    assert _violations(page) == []
    assert page.errors == []
