"""Schemathesis against the API's own OpenAPI schema, through the WSGI app: inputs made
from the schema (valid and not), authenticated with a real token of a project with
rollouts. No answer is a 5xx and every answer matches its documented schema.

Bounded and deterministic: a few examples per operation, derandomized, so the run is the
same every time and stays well under a minute.
"""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from dashboard.api.main import api
from pipeline.refresh import refresh_project_run
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
MAX_EXAMPLES = 6
# Every other request that names a rollout names a real one (deterministic: a counter).
_CALLS = itertools.count()
CHECKS = [not_a_server_error, response_schema_conformance]


# The schema as the API builds it (no request, no database at import time); the requests
# go to the WSGI app in the test's own transaction. (schemathesis.pytest.from_fixture
# would load it lazily, but reads a node attribute pytest 9 no longer has.)
schema = schemathesis.openapi.from_dict(api.get_openapi_schema())
schema.app = get_wsgi_application()


@pytest.fixture
def refreshed_project(api_project):
    """After the real refresh: the failed rollouts have their attribution."""
    refresh_project_run(api_project.pk)
    return api_project


@pytest.fixture
def _connection_kept():
    # Django closes the database connection after each request it serves; the test client
    # stops that, a bare WSGI app does not, and the test's own transaction would go with it
    # (on PostgreSQL). The same as the test client does, for the length of the test.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def _no_token_throttle(settings):
    # Only the token's project is asked for (below): no refusal should pile up to a 429.
    settings.FAULTLINE_TOKEN_FAILURE_LIMIT = 10**6


def _aimed_at_the_project(case, slug: str) -> None:
    """The generated slug would only ever meet a refused token: ask for the token's own
    project, and for every other request a rollout that exists, so bodies and queries
    reach the views (random ids reach the 404s)."""
    parameters = dict(case.path_parameters or {})
    if "slug" in parameters:
        parameters["slug"] = slug
    if "external_id" in parameters and next(_CALLS) % 2:
        parameters["external_id"] = "f1"
    case.path_parameters = parameters


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_it_answers_every_generated_request_within_its_schema(
    case, refreshed_project, token, _no_token_throttle, _connection_kept
):
    _aimed_at_the_project(case, refreshed_project.slug)
    headers = {"Authorization": auth(token)["HTTP_AUTHORIZATION"]}
    case.call_and_validate(headers=headers, checks=CHECKS)
