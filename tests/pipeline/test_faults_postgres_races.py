"""On PostgreSQL, where requests and workers really run at once: the same file uploaded
twice at the same moment, and two workers ingesting the same upload at once, each end with
one upload and one copy of its rollouts (the unique constraint and the claim, not a check
then a write). SQLite serialises every writer, so there is no race to prove there."""

from __future__ import annotations

import threading

import pytest

from tests.pipeline.faults_http import api_upload
from tests.pipeline.faults_support import MANAGE, faultline_stack, on_postgres
from tests.pipeline.faults_traces import native_jsonl
from tests.pipeline.test_faults_worker_lost import one_copy, wait_finished
from tests.services import wait_for

pytestmark = [
    pytest.mark.services,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not on_postgres(),
        reason="needs PostgreSQL (DATABASE_URL=postgres://...): SQLite runs one writer at a time",
    ),
]

ROLLOUTS, STEPS = 3000, 10
STORE = """
from pathlib import Path
from ingest.services import upload_create
from projects.models import Project
path = Path({path!r})
with path.open("rb") as stream:
    upload = upload_create(project=Project.objects.get(slug="faults"), stream=stream,
                           original_name=path.name).upload
print("JSON=%d" % upload.pk)
"""
# Both processes start Django, say they are ready, and call upload_ingest together.
RACE = """
import time
from pathlib import Path
from ingest.services import upload_ingest
gate = Path({gate!r})
Path({ready!r}).touch()
deadline = time.monotonic() + 60
while not gate.exists() and time.monotonic() < deadline:
    time.sleep(0.01)
print("STATUS=" + upload_ingest(upload_id={pk}).status)
"""


def test_it_stores_one_upload_of_a_file_sent_twice_at_once(tmp_path):
    trace = native_jsonl(tmp_path / "twice.jsonl", rollouts=ROLLOUTS, steps=STEPS)
    content = trace.read_bytes()
    with faultline_stack(tmp_path / "stack") as stack:
        stack.worker()
        base = stack.web()
        start = threading.Barrier(2)
        answers = []

        def send() -> None:
            start.wait(timeout=30)
            answers.append(api_upload(base, stack.token, "faults", "twice.jsonl", content))

        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(a.status for a in answers) in ([200, 202], [202, 202]), answers
        assert len({a.json()["id"] for a in answers}) == 1
        (upload_id,) = [row[0] for row in stack.sql("SELECT id FROM ingest_upload")]
        assert wait_finished(stack, "ingest_upload", upload_id)[0] == "done"
        assert one_copy(stack, upload_id) == (ROLLOUTS, ROLLOUTS, ROLLOUTS * STEPS)


def test_it_stores_one_copy_when_two_workers_ingest_the_same_upload_at_once(tmp_path):
    trace = native_jsonl(tmp_path / "raced.jsonl", rollouts=ROLLOUTS, steps=STEPS)
    with faultline_stack(tmp_path / "stack") as stack:
        upload_id = stack.shell_json(STORE.format(path=str(trace)))
        gate = tmp_path / "gate"
        racers = []
        for number in range(2):
            code = RACE.format(
                gate=str(gate), ready=str(tmp_path / f"ready-{number}"), pk=upload_id
            )
            racers.append(stack.spawn([*MANAGE, "shell", "-c", code], f"racer-{number}")[0])
        wait_for(
            lambda: all((tmp_path / f"ready-{n}").exists() for n in range(2)),
            timeout=60,
            what="both racers to start",
        )
        gate.touch()
        for racer in racers:
            assert racer.wait(timeout=120) == 0
        status, attempt = stack.one(
            "SELECT status, attempt FROM ingest_upload WHERE id = ?", (upload_id,)
        )
        assert (status, attempt) == ("done", 2)
        assert one_copy(stack, upload_id) == (ROLLOUTS, ROLLOUTS, ROLLOUTS * STEPS)
