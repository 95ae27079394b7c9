"""Redis frozen (SIGSTOP: it takes connections and never answers, as a swapped-out or
stalled server does) during an upload: the request answers at once with the upload
queued, as with Redis down; once Redis runs again the sweeper sends it and a worker
ingests it, once."""

from __future__ import annotations

import signal
import time

import pytest

from tests.pipeline.faults_http import api_upload
from tests.pipeline.faults_support import faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.services import wait_for

pytestmark = pytest.mark.services

# Sending a task waits at most this long for a broker that does not answer (the broker's
# socket timeout, settings' broker transport options, and one retry): far below a
# client's or gunicorn's timeout.
ANSWER_WITHIN_S = 20


def test_an_upload_answers_while_redis_is_frozen_and_is_ingested_once_it_thaws(tmp_path):
    content = native_jsonl(tmp_path / "frozen.jsonl", rollouts=3, steps=4, tag="f").read_bytes()
    with faultline_stack(tmp_path / "stack") as stack:
        base = stack.web()
        assert stack.redis.process is not None
        stack.redis.process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            answer = api_upload(base, stack.token, "faults", "frozen.jsonl", content)
            waited = time.monotonic() - started
        finally:
            stack.redis.process.send_signal(signal.SIGCONT)
        assert answer.status == 202, answer.body
        assert answer.json()["status"] == "queued"
        assert waited < ANSWER_WITHIN_S, f"the upload waited {waited:.0f} s for Redis"

        stack.worker()
        stack.sweep()

        def done():
            statuses = [s for (s,) in stack.sql("SELECT status FROM ingest_upload")]
            return statuses if statuses and all(s in ("done", "failed") for s in statuses) else None

        assert wait_for(done, timeout=90, what="the upload") == ["done"]
        assert stack.one("SELECT COUNT(*) FROM ingest_trajectory") == 3
