"""redis-server started as scripts/run.sh starts it (an append-only file under var/) keeps a
queued task across a restart: stopped with the task waiting and no worker, started again,
a worker then runs it. No sweeper runs here: the message itself survived."""

from __future__ import annotations

import pytest

from tests.pipeline.faults_support import faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.pipeline.test_faults_worker_lost import submit, wait_finished

pytestmark = pytest.mark.services


def test_it_keeps_a_queued_task_across_a_redis_restart(tmp_path):
    trace = native_jsonl(tmp_path / "kept.jsonl", rollouts=5, steps=4)
    with faultline_stack(tmp_path / "stack", appendonly=True) as stack:
        upload_id = submit(stack, trace)
        assert stack.one("SELECT dispatched_at FROM ingest_upload WHERE id = ?", (upload_id,))
        stack.redis.stop()
        assert not stack.redis.ping()
        assert any(stack.redis.workdir.rglob("*.aof*")), "no append-only file under var/"

        stack.redis.start()
        stack.worker()
        assert wait_finished(stack, "ingest_upload", upload_id) == ("done", 1)
        assert (
            stack.one("SELECT COUNT(*) FROM ingest_trajectory WHERE upload_id = ?", (upload_id,))
            == 5
        )
