"""Shared fixtures: three standing users (owner, member, outsider) and a project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(
    os.environ.get("FAULTLINE_DEMO_DATA", REPO_ROOT.parent / "shared" / "data")
).resolve()
WHO_AND_WHEN = SHARED_DATA / "who_and_when" / "Who&When"
TAU_AIRLINE = SHARED_DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"


def shared_file(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", "owner@example.com", "owner-pass-123")


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("member", "member@example.com", "member-pass-123")


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user(
        "outsider", "outsider@example.com", "outsider-pass-123"
    )


@pytest.fixture
def project(owner, member):
    from projects.models import Membership, Project, Role

    project = Project.objects.create(name="Acme agents", slug="acme")
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    Membership.objects.create(project=project, user=member, role=Role.MEMBER)
    return project


@pytest.fixture(autouse=True)
def _local_cache(settings):
    # Tests run without a shared cache; the end-to-end test starts real Redis itself. Each
    # test starts with an empty one: what one test leaves (refused-token counts that the
    # throttle answers 429 on, progress, pending marks) must not reach the next.
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.MEDIA_ROOT = str(Path(settings.VAR_DIR) / "test-media")
    cache.clear()
    yield
    cache.clear()


# Django's PBKDF2 takes 0.6 s a password on this machine, and the standing users alone
# (owner, member, ...) are two of them in most tests: minutes of the suite. No test is
# about the hasher's cost. Tests marked services keep the real one: a server they start in
# another process knows only the product's hashers.
FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_password_hashing(request, settings):
    if request.node.get_closest_marker("services") is None:
        settings.PASSWORD_HASHERS = FAST_HASHERS


@pytest.fixture
def viewer(django_user_model, project):
    from projects.models import Membership, Role

    user = django_user_model.objects.create_user("viewer", "viewer@example.com", "viewer-pass-123")
    Membership.objects.create(project=project, user=user, role=Role.VIEWER)
    return user


def ingest_file(project, path: Path, *, name: str | None = None, requested_format: str = ""):
    """Store and ingest a file through the real pipeline, in-process."""
    from ingest.services import upload_create, upload_ingest

    with path.open("rb") as stream:
        outcome = upload_create(
            project=project,
            stream=stream,
            original_name=name or path.name,
            requested_format=requested_format,
        )
    return upload_ingest(upload_id=outcome.upload.pk)


def ingest_bytes(project, data: bytes, name: str, *, requested_format: str = ""):
    import io

    from ingest.services import upload_create, upload_ingest

    outcome = upload_create(
        project=project,
        stream=io.BytesIO(data),
        original_name=name,
        requested_format=requested_format,
    )
    return upload_ingest(upload_id=outcome.upload.pk)


def suggested_misbehaviour(project, category, *, support: float, basis: str, **fields):
    """A misbehaviour whose steps point to ``category`` as a suggestion: ``support`` of
    them, by a behaviour ``signal`` or by their ``wording``."""
    from analysis.models import Misbehaviour

    return Misbehaviour.objects.create(
        project=project,
        suggested_category=category,
        suggestion_support=support,
        suggestion_basis=basis,
        **fields,
    )


@pytest.fixture
def unreachable_broker():
    """Celery publishes to a port where nothing listens: the broker is down."""
    from faultline.celery import app
    from tests.services import free_port

    def forget_connections() -> None:
        # The app keeps its connection pools: drop them so the next publish connects anew.
        app._pool = None
        app.amqp._producer_pool = None

    saved = (app.conf.broker_url, app.conf.task_always_eager)
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    app.conf.task_always_eager = False
    forget_connections()
    yield
    app.conf.broker_url, app.conf.task_always_eager = saved
    forget_connections()


# --- which tests the PostgreSQL pass runs ---------------------------------------------

# A test that reaches the database asks for it through one of these (pytest-django's
# django_db marker asks for the helper itself; the fixtures below all request it).
_DATABASE_FIXTURES = frozenset({"_django_db_helper", "db", "transactional_db", "live_server"})


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="run only the tests that use the database (and those marked services or "
        "postgres, which reach it from a subprocess): what a second database adds; a test "
        "that never touches one passes or fails the same on both",
    )


def uses_database(item) -> bool:
    """Whether a collected test reaches the database: the django_db marker, a fixture that
    needs it, or a mark saying a subprocess does (services, postgres)."""
    if any(item.get_closest_marker(name) for name in ("django_db", "services", "postgres")):
        return True
    return bool(_DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--database-tests-only"):
        return
    kept, dropped = [], []
    for item in items:
        (kept if uses_database(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
