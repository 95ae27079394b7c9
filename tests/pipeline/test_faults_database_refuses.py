"""The database refuses a write in the middle of a file (a trigger stands in for a full
disk, a constraint or a permission): the upload fails with MSG_DATABASE_REFUSED and nothing
of the file is stored. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.pipeline.faults_traces import native_jsonl

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED_AT = 40  # the rollout whose step is refused, after several batches were written
TRIGGER_MESSAGE = "refused by the test trigger"


@pytest.fixture
def refusing_trigger():
    """Refuse every step whose content holds 'refuse-me'; removed afterwards."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION faults_refuse_me() RETURNS trigger AS $$ BEGIN "
                "IF NEW.content LIKE '%%refuse-me%%' THEN "
                f"RAISE EXCEPTION '{TRIGGER_MESSAGE}'; END IF; RETURN NEW; END $$ "
                "LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER faults_refuse_me BEFORE INSERT ON ingest_step "
                "FOR EACH ROW EXECUTE FUNCTION faults_refuse_me()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER faults_refuse_me BEFORE INSERT ON ingest_step "
                "WHEN NEW.content LIKE '%refuse-me%' "
                f"BEGIN SELECT RAISE(ABORT, '{TRIGGER_MESSAGE}'); END"
            )
    yield
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER IF EXISTS faults_refuse_me ON ingest_step")
            cursor.execute("DROP FUNCTION IF EXISTS faults_refuse_me()")
        else:
            cursor.execute("DROP TRIGGER IF EXISTS faults_refuse_me")


@pytest.fixture
def refused_upload(project, settings, tmp_path, refusing_trigger):
    from ingest.services import upload_create, upload_ingest

    settings.FAULTLINE_INGEST_BATCH_STEPS = 50  # earlier batches are written before the refusal
    path = native_jsonl(tmp_path / "refused.jsonl", rollouts=60, steps=6)
    lines = path.read_text().splitlines()
    lines[REFUSED_AT] = lines[REFUSED_AT].replace('"You are an agent."', '"refuse-me"')
    path.write_text("\n".join(lines) + "\n")
    with path.open("rb") as stream:
        upload = upload_create(project=project, stream=stream, original_name=path.name).upload
    return upload_ingest(upload_id=upload.pk)


def test_it_fails_the_upload_with_the_database_refusal(refused_upload):
    from ingest.services import MSG_DATABASE_REFUSED

    before, after = MSG_DATABASE_REFUSED.split("{error}")
    message = refused_upload.error_message
    assert refused_upload.status == "failed"
    assert message.startswith(before.format(name="refused.jsonl"))
    assert message.endswith(after)
    assert TRIGGER_MESSAGE in message


def test_it_stores_nothing_of_a_file_the_database_refused(refused_upload):
    from ingest.models import Label, Step, Trajectory

    assert Trajectory.objects.filter(upload=refused_upload).count() == 0
    assert Step.objects.filter(trajectory__upload=refused_upload).count() == 0
    assert Label.objects.filter(trajectory__upload=refused_upload).count() == 0
    assert Step.objects.count() == 0  # no orphan rows either
    assert (refused_upload.trajectory_count, refused_upload.step_count) == (0, 0)


def test_it_offers_a_retry_of_a_file_the_database_refused(refused_upload):
    from pipeline.uploads import upload_retryable

    # Not the file's fault: once the database accepts writes again, the same file goes in.
    assert upload_retryable(refused_upload)
