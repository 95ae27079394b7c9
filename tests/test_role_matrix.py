"""The role matrix: every URL pattern of the project, asked by every kind of caller.

Pages are asked by five callers (owner, member, viewer, a logged-in outsider, anonymous);
token APIs by four (the project's token, another project's token, a revoked token of the
project, no token). Each row of the tables below says what each caller gets, for GET and
for POST. A URL pattern without a row fails the test that walks the resolver, so a new
endpoint cannot ship without someone deciding who may call it.

Every request runs in a savepoint that is rolled back, so a write by one caller (a
deleted correction, a merged misbehaviour) never changes what the next caller sees, and
nothing is dispatched to a worker (on-commit callbacks never run).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.exports.conftest import ingest_rollouts, native_rollout

pytestmark = pytest.mark.django_db

PAGE_CALLERS = ("owner", "member", "viewer", "outsider", "anonymous")
TOKEN_CALLERS = ("token", "other_token", "revoked_token", "no_token")
METHODS = ("GET", "POST")
MSG_NO_ROW = (
    "URL pattern {name!r} ({route}) has no row in the role matrix of "
    "tests/test_role_matrix.py: add one saying what each caller gets."
)
MSG_SERVER_ERROR = "{method} {url} as {caller} answered {status}: a server error."
MSG_STALE_ROW = "The role matrix has a row for {name!r}, which no URL pattern has any more."


@dataclass(frozen=True)
class Row:
    """Expected statuses, one per caller in order, as a space-separated string per method;
    ``pk`` names the fixture object whose id fills the URL's ``pk``."""

    GET: str
    POST: str
    pk: str = ""
    # A fixed ``name`` URL argument (else the export's file name).
    name: str = ""


# owner member viewer outsider anonymous. 302 for anonymous is the login redirect; 302 for
# others is the view's own redirect (after a form, to the rollout). Views that check the
# role before the method answer 403 to a viewer's GET of a POST-only action.
PAGE_MATRIX: dict[str, Row] = {
    "login": Row(GET="200 200 200 200 200", POST="200 200 200 200 200"),
    "logout": Row(GET="405 405 405 405 405", POST="302 302 302 302 302"),
    "password_change": Row(GET="200 200 200 200 302", POST="200 200 200 200 302"),
    "password_change_done": Row(GET="200 200 200 200 302", POST="405 405 405 405 302"),
    # The documentation: any logged-in user (it belongs to no project).
    "doc_index": Row(GET="200 200 200 200 302", POST="405 405 405 405 302"),
    "doc_page": Row(GET="200 200 200 200 302", POST="405 405 405 405 302", name="send-traces"),
    "dashboard:project_list": Row(GET="200 200 200 200 302", POST="200 200 200 200 302"),
    "dashboard:project_detail": Row(GET="200 200 200 404 302", POST="200 200 200 404 302"),
    "dashboard:rollout_list": Row(GET="200 200 200 404 302", POST="200 200 200 404 302"),
    "dashboard:rollout_detail": Row(
        GET="200 200 200 404 302", POST="200 200 200 404 302", pk="rollout"
    ),
    "dashboard:rollout_compare": Row(
        GET="200 200 200 404 302", POST="200 200 200 404 302", pk="rollout"
    ),
    "dashboard:rollout_outcome": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="rollout"
    ),
    "dashboard:rollouts_download": Row(GET="200 200 200 404 302", POST="200 200 200 404 302"),
    "dashboard:rollout_download": Row(
        GET="200 200 200 404 302", POST="200 200 200 404 302", pk="rollout"
    ),
    "dashboard:uploads": Row(GET="200 200 200 404 302", POST="302 302 403 404 302"),
    "dashboard:upload_status": Row(
        GET="200 200 200 404 302", POST="200 200 200 404 302", pk="upload"
    ),
    "dashboard:project_settings": Row(GET="200 200 200 404 302", POST="200 403 403 404 302"),
    "attribution:labelling_queue": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    "attribution:calibration_settings": Row(GET="405 405 405 404 302", POST="302 403 403 404 302"),
    "attribution:calibration": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    # The rollout page's panel alone (labelling.js); the world's rollout has none: 404.
    "attribution:rollout_panel": Row(
        GET="404 404 404 404 302", POST="405 405 405 404 302", pk="rollout"
    ),
    "attribution:label_add": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="rollout"
    ),
    # The label is the member's: its author or an owner removes it (another member is told
    # no by the view's message, a redirect too).
    "attribution:label_delete": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="rollout"
    ),
    "exports:index": Row(GET="200 200 200 404 302", POST="400 400 403 404 302"),
    "exports:status": Row(GET="200 200 200 404 302", POST="405 405 405 404 302", pk="export"),
    "exports:file": Row(GET="200 200 200 404 302", POST="405 405 405 404 302", pk="export"),
    "exports:zip": Row(GET="200 200 200 404 302", POST="405 405 405 404 302", pk="export"),
    "exports:correction_save": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="rollout"
    ),
    "exports:correction_delete": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="rollout"
    ),
    "analysis:misbehaviour_list": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    "analysis:misbehaviour_map": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    "analysis:taxonomy": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    "analysis:category_create": Row(GET="405 405 403 404 302", POST="302 302 403 404 302"),
    "analysis:refresh": Row(GET="405 405 403 404 302", POST="302 302 403 404 302"),
    "analysis:run_status": Row(GET="200 200 200 404 302", POST="405 405 405 404 302"),
    "analysis:misbehaviour_detail": Row(
        GET="200 200 200 404 302", POST="405 405 405 404 302", pk="misbehaviour"
    ),
    "analysis:misbehaviour_rename": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="misbehaviour"
    ),
    "analysis:misbehaviour_merge": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="misbehaviour"
    ),
    "analysis:misbehaviour_categorise": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="misbehaviour"
    ),
    "analysis:misbehaviour_confirm": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="misbehaviour"
    ),
    "dashboard:upload_retry": Row(
        GET="405 405 403 404 302", POST="302 302 403 404 302", pk="upload"
    ),
    "dashboard:refresh_retry": Row(GET="405 405 403 404 302", POST="302 302 403 404 302"),
    "exports:retry": Row(GET="405 405 403 404 302", POST="302 302 403 404 302", pk="export"),
}

# token other_token revoked_token no_token. A refused token is a 404 (it never tells
# whether the project exists); an upload POST without a file is a 400; an export POST
# without a body starts an export of every kind (202).
TOKEN_MATRIX: dict[str, Row] = {
    "api_upload_create": Row(GET="405 405 405 405", POST="400 404 404 404"),
    "api_upload_status": Row(GET="200 404 404 404", POST="405 405 405 405", pk="upload"),
    "api_rollouts_export": Row(GET="200 404 404 404", POST="405 405 405 405"),
    # OTLP/HTTP: the token alone names the project (another project's token is valid for
    # that project); a refused token is a 401, as exporters expect; a form body is a 415.
    "otlp_traces": Row(GET="405 405 405 405", POST="415 415 401 401"),
    # REST API v1 (dashboard/api): the schema and its docs are public; every operation
    # answers a refused token (another project's, revoked, none) with a counted 404; a
    # body the operation needs and did not get is a 400 naming the field.
    "api_v1:api-root": Row(GET="404 404 404 404", POST="404 404 404 404"),
    # ninja's schema and docs views answer any method alike (they write nothing).
    "api_v1:openapi-json": Row(GET="200 200 200 200", POST="200 200 200 200"),
    "api_v1:openapi-view": Row(GET="200 200 200 200", POST="200 200 200 200"),
    "api_docs_asset": Row(GET="200 200 200 200", POST="405 405 405 405", name="swagger-ui.css"),
    "api_v1:project_list": Row(GET="200 200 404 404", POST="405 405 405 405"),
    "api_v1:project_detail": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:token_list": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:tool_list": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:upload_create": Row(GET="405 405 405 405", POST="400 404 404 404"),
    "api_v1:upload_status": Row(GET="200 404 404 404", POST="405 405 405 405", pk="upload"),
    "api_v1:upload_retry": Row(GET="405 405 405 405", POST="409 404 404 404", pk="upload"),
    "api_v1:rollout_list": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:rollout_download": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:rollout_detail": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:rollout_outcome": Row(GET="405 405 405 405", POST="400 404 404 404"),
    "api_v1:rollouts_outcome": Row(GET="405 405 405 405", POST="400 404 404 404"),
    "api_v1:rollout_labels": Row(GET="200 404 404 404", POST="400 404 404 404"),
    "api_v1:rollout_label_add": Row(GET="200 404 404 404", POST="400 404 404 404"),
    "api_v1:rollout_attribution": Row(GET="404 404 404 404", POST="405 405 405 405"),
    "api_v1:calibration": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:labelling_queue": Row(GET="200 404 404 404", POST="405 405 405 405"),
    # DELETE only (tests/dashboard/api/test_feedback.py): ninja answers other methods first.
    "api_v1:rollout_label_delete": Row(GET="405 405 405 405", POST="405 405 405 405"),
    "api_v1:misbehaviour_list": Row(GET="200 404 404 404", POST="405 405 405 405"),
    "api_v1:misbehaviour_detail": Row(
        GET="200 404 404 404", POST="405 405 405 405", pk="misbehaviour"
    ),
    "api_v1:misbehaviour_members": Row(
        GET="200 404 404 404", POST="405 405 405 405", pk="misbehaviour"
    ),
    "api_v1:export_list": Row(GET="200 404 404 404", POST="202 404 404 404"),
    "api_v1:exports_slash": Row(GET="200 404 404 404", POST="202 404 404 404"),
    "api_v1:export_create": Row(GET="200 404 404 404", POST="202 404 404 404"),
    "api_v1:export_status": Row(GET="200 404 404 404", POST="405 405 405 405", pk="export"),
    "api_v1:export_retry": Row(GET="405 405 405 405", POST="409 404 404 404", pk="export"),
    "api_v1:export_file": Row(GET="200 404 404 404", POST="405 405 405 405", pk="export"),
    "api_v1:export_zip": Row(GET="200 404 404 404", POST="405 405 405 405", pk="export"),
    "api_otlp_traces": Row(GET="405 405 405 405", POST="415 415 401 401"),
}


def url_patterns(entries: list[Any] | None = None) -> Iterator[tuple[str, str, frozenset[str]]]:
    """(namespace:name, route, URL argument names) of every pattern, through every include
    (an unnamed pattern is listed by its route, so it fails the matrix too)."""

    def walk(entries: list[Any], namespace: str, prefix: str, arguments: frozenset[str]):
        for entry in entries:
            route = prefix + str(entry.pattern)
            names = arguments | frozenset(entry.pattern.regex.groupindex)
            if isinstance(entry, URLResolver):
                inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                yield from walk(entry.url_patterns, inner, route, names)
            elif isinstance(entry, URLPattern):
                yield f"{namespace}{entry.name or route}", route, names

    yield from walk(
        get_resolver().url_patterns if entries is None else entries, "", "/", frozenset()
    )


@pytest.fixture(autouse=True)
def _fast_passwords_no_throttle(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MEDIA_ROOT = str(tmp_path / "media")
    # Dozens of refused tokens from one address are the point here, not a throttle test.
    settings.FAULTLINE_TOKEN_FAILURE_LIMIT = 10**6


@dataclass
class World:
    project: Any
    objects: dict[str, Any]
    users: dict[str, Any]
    tokens: dict[str, str]
    correction_pk: int
    export_file: str
    label_pk: int = 0


@pytest.fixture
def world(project, owner, member, viewer, outsider) -> World:
    """A project with a rollout, an upload, a misbehaviour, a finished export, a
    correction, a member's label and tokens (its own, a revoked one, and another
    project's)."""
    from analysis.models import Misbehaviour
    from exports.core.filters import parse_filters
    from exports.services import correction_save, export_create, export_run
    from ingest.models import Label, Trajectory
    from projects.models import ApiToken, Project
    from projects.tokens import project_token_issue, token_revoke

    upload = ingest_rollouts(
        project,
        [native_rollout("a1"), native_rollout("ok", outcome="success", cancel="GOOD")],
    )
    rollout = Trajectory.objects.get(project=project, external_id="a1")
    correction = correction_save(
        rollout=rollout, step_index=3, kind="message", author=owner, content="Ask first."
    )
    label = Label.objects.create(trajectory=rollout, step_index=2, source="human", author=member)
    misbehaviour = Misbehaviour.objects.create(project=project, key="m1", name="wrong id")
    Misbehaviour.objects.create(project=project, key="m2", name="other")
    job = export_create(
        project=project, kinds=("sft",), filters=parse_filters({}), user=owner, dispatch=False
    )
    job = export_run(job_id=job.pk)
    revoked = project_token_issue(project=project, name="old")
    token_revoke(token=ApiToken.objects.get(project=project, name="old"))
    other = Project.objects.create(name="Other", slug="other")
    return World(
        project=project,
        objects={"rollout": rollout, "upload": upload, "misbehaviour": misbehaviour, "export": job},
        users={"owner": owner, "member": member, "viewer": viewer, "outsider": outsider},
        tokens={
            "token": project_token_issue(project=project),
            "other_token": project_token_issue(project=other),
            "revoked_token": revoked,
            "no_token": "",
        },
        correction_pk=correction.pk,
        export_file="sft.jsonl",
        label_pk=label.pk,
    )


def url_for(name: str, row: Row, names: frozenset[str], world: World) -> str:
    kwargs: dict[str, Any] = {}
    if "slug" in names:
        kwargs["slug"] = world.project.slug
    if "pk" in names:
        kwargs["pk"] = world.objects[row.pk].pk
    if "correction_pk" in names:
        kwargs["correction_pk"] = world.correction_pk
    if "label_pk" in names:
        kwargs["label_pk"] = world.label_pk
    if "name" in names:
        kwargs["name"] = row.name or world.export_file
    if "external_id" in names:
        kwargs["external_id"] = world.objects["rollout"].external_id
    return reverse(name, kwargs=kwargs)


def ask(client: Client, method: str, url: str, **extra: Any) -> Any:
    """One request, its writes rolled back afterwards."""
    with transaction.atomic():
        send = client.get if method == "GET" else client.post
        response = send(url, **extra)
        # Streaming bodies are read inside the savepoint, where their rows still exist.
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        transaction.set_rollback(True)
    return response


def logged_in_client(user: Any) -> Client:
    """A client holding a session of ``user``, as a log-in leaves it.

    Not ``Client.force_login``: that logs in with a request that has no REMOTE_ADDR, which
    django-axes then stores as the address "unknown", and PostgreSQL's inet column refuses.
    """
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    client = Client()
    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    return client


def page_client(world: World, caller: str) -> Client:
    return Client() if caller == "anonymous" else logged_in_client(world.users[caller])


def token_headers(world: World, caller: str) -> dict[str, str]:
    token = world.tokens[caller]
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}


def arguments_by_name() -> dict[str, frozenset[str]]:
    return {name: arguments for name, _, arguments in url_patterns()}


def rows_missing(entries: list[Any] | None = None) -> list[str]:
    return [
        MSG_NO_ROW.format(name=name, route=route)
        for name, route, _ in url_patterns(entries)
        if name not in PAGE_MATRIX and name not in TOKEN_MATRIX
    ]


def test_it_has_a_row_for_every_url_pattern():
    missing = rows_missing()
    assert not missing, "\n".join(missing)


def test_it_names_a_pattern_that_has_no_row_even_inside_an_include():
    from django.http import HttpResponse
    from django.urls import include, path

    def view(request, slug):
        return HttpResponse()

    inner = ([path("new-thing/", view, name="new_thing"), path("unnamed/", view)], "brand_new")
    entries = [*get_resolver().url_patterns, path("p/<slug:slug>/new/", include(inner))]
    assert rows_missing(entries) == [
        MSG_NO_ROW.format(name="brand_new:new_thing", route="/p/<slug:slug>/new/new-thing/"),
        MSG_NO_ROW.format(
            name="brand_new:/p/<slug:slug>/new/unnamed/", route="/p/<slug:slug>/new/unnamed/"
        ),
    ]


def test_it_has_no_row_for_a_url_that_is_gone():
    names = set(arguments_by_name())
    stale = [MSG_STALE_ROW.format(name=n) for n in [*PAGE_MATRIX, *TOKEN_MATRIX] if n not in names]
    assert not stale, "\n".join(stale)


def _observed(world: World, name: str, row: Row, callers: tuple[str, ...]) -> dict[str, str]:
    url = url_for(name, row, arguments_by_name()[name], world)
    observed: dict[str, str] = {}
    for method in METHODS:
        statuses = []
        for caller in callers:
            if callers is PAGE_CALLERS:
                response = ask(page_client(world, caller), method, url)
            else:
                response = ask(Client(), method, url, **token_headers(world, caller))
            assert response.status_code < 500, MSG_SERVER_ERROR.format(
                method=method, url=url, caller=caller, status=response.status_code
            )
            if caller == "anonymous" and response.status_code == 302 and name != "logout":
                assert response["Location"].startswith("/login/?next="), (name, method)
            statuses.append(str(response.status_code))
        observed[method] = " ".join(statuses)
    return observed


@pytest.mark.parametrize("name", sorted(PAGE_MATRIX))
def test_it_answers_each_page_caller_as_the_matrix_says(world, name):
    row = PAGE_MATRIX[name]
    observed = _observed(world, name, row, PAGE_CALLERS)
    assert observed == {"GET": row.GET, "POST": row.POST}, f"{name} ({PAGE_CALLERS})"


@pytest.mark.parametrize("name", sorted(TOKEN_MATRIX))
def test_it_answers_each_token_caller_as_the_matrix_says(world, name):
    row = TOKEN_MATRIX[name]
    observed = _observed(world, name, row, TOKEN_CALLERS)
    assert observed == {"GET": row.GET, "POST": row.POST}, f"{name} ({TOKEN_CALLERS})"
