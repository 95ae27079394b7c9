"""A worker's pool process killed with SIGKILL in the middle of a job: the message comes
back (task_reject_on_worker_lost), the job claims itself under a new attempt and ends done
with exactly one copy of every rollout."""

from __future__ import annotations

import pytest

from tests.pipeline.faults_support import Stack, faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.services import wait_for

pytestmark = pytest.mark.services

BIG_ROLLOUTS, BIG_STEPS = 6000, 20
SUBMIT = """
from pathlib import Path
from projects.models import Project
from pipeline.uploads import upload_submit
path = Path({path!r})
with path.open("rb") as stream:
    outcome = upload_submit(project=Project.objects.get(slug="faults"), stream=stream,
                            original_name=path.name)
print("JSON=%d" % outcome.upload.pk)
"""


def submit(stack: Stack, path) -> int:
    return int(stack.shell_json(SUBMIT.format(path=str(path))))


def wait_running(stack: Stack, table: str, pk: int, *, attempt: int = 1) -> None:
    wait_for(
        lambda: stack.one(f"SELECT status, attempt FROM {table} WHERE id = ?", (pk,))
        == ("running", attempt),
        timeout=90,
        what=f"{table} {pk} to run",
        interval=0.05,
    )


def wait_finished(stack: Stack, table: str, pk: int, timeout: float = 120) -> tuple:
    return wait_for(
        lambda: (row := stack.one(f"SELECT status, attempt FROM {table} WHERE id = ?", (pk,)))
        and row[0] in ("done", "failed")
        and row,
        timeout=timeout,
        what=f"{table} {pk} to finish",
        interval=0.2,
    )


def one_copy(stack: Stack, upload_id: int) -> tuple[int, int, int]:
    return stack.one(
        "SELECT COUNT(*), COUNT(DISTINCT external_id), "
        "(SELECT COUNT(*) FROM ingest_step s JOIN ingest_trajectory t "
        " ON s.trajectory_id = t.id WHERE t.upload_id = ?) "
        "FROM ingest_trajectory WHERE upload_id = ?",
        (upload_id, upload_id),
    )


def test_it_redelivers_an_ingest_whose_pool_process_was_killed(tmp_path):
    trace = native_jsonl(tmp_path / "big.jsonl", rollouts=BIG_ROLLOUTS, steps=BIG_STEPS)
    with faultline_stack(tmp_path / "stack") as stack:
        # Queued before any worker runs, so the poll below cannot miss the run: started
        # first, the worker could ingest it (2 s) before the submitting shell had exited.
        upload_id = submit(stack, trace)
        worker = stack.worker()
        wait_running(stack, "ingest_upload", upload_id)
        worker.kill_pool_child()

        status, attempt = wait_finished(stack, "ingest_upload", upload_id)
        assert status == "done", worker.output()
        assert attempt >= 2  # delivered again after the kill
        assert one_copy(stack, upload_id) == (BIG_ROLLOUTS, BIG_ROLLOUTS, BIG_ROLLOUTS * BIG_STEPS)
