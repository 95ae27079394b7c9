"""The API docs page in Chromium under the real Content-Security-Policy: Swagger UI draws
every operation of the schema, with no CSP violation and no request to another host."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from dashboard.api.main import api

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline"));
});
"""


def test_it_draws_swagger_ui_offline_under_the_policy(chromium, live_server):
    context = chromium.new_context()
    page = context.new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(urlparse(request.url).netloc))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(live_server.url + "/api/v1/docs")
        page.wait_for_selector(".opblock", timeout=20_000)
        operations = page.locator(".opblock").count()
        violations = page.evaluate("window.__cspViolations")
    finally:
        context.close()
    expected = sum(len(ops) for ops in api.get_openapi_schema()["paths"].values())
    assert operations == expected
    assert violations == [] and errors == []
    assert hosts == {urlparse(live_server.url).netloc}
