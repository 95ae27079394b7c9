"""Broker down during uploads through the browser form, the API and the CLI: every file is
stored and answered as queued (never a 500); once redis-server is back and the sweeper has
run, a real worker ingests every upload and the project's refresh runs. Nothing is lost."""

from __future__ import annotations

import pytest

from tests.pipeline.faults_http import Browser, api_upload
from tests.pipeline.faults_support import faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.services import wait_for

pytestmark = pytest.mark.services


def test_it_stores_uploads_while_the_broker_is_down_and_ingests_them_once_it_is_back(tmp_path):
    from pipeline.management.commands.ingest import MSG_QUEUED_TOTAL, MSG_STORED_QUEUED

    files = {
        name: native_jsonl(tmp_path / name, rollouts=6, steps=6, tag=name)
        for name in ("form.jsonl", "api.jsonl", "cli.jsonl")
    }
    with faultline_stack(tmp_path / "stack", redis_running=False) as stack:
        base = stack.web()

        browser = Browser(base, "alice", "alice-pass-123")
        form = browser.upload("faults", "form.jsonl", files["form.jsonl"].read_bytes())
        assert form.status == 202, form.body
        assert form.json()["uploads"][0]["status"] == "queued"

        api = api_upload(base, stack.token, "faults", "api.jsonl", files["api.jsonl"].read_bytes())
        assert api.status == 202, api.body
        assert api.json()["status"] == "queued"

        cli = stack.manage("ingest", str(files["cli.jsonl"]), "--project", "faults")
        assert cli.returncode == 0, cli.stdout + cli.stderr
        upload_id = stack.one("SELECT id FROM ingest_upload WHERE original_name = 'cli.jsonl'")
        assert MSG_STORED_QUEUED.format(name="cli.jsonl", pk=upload_id) in cli.stdout
        # The summary says the file is kept, not that nothing happened ("Stored 0
        # trajectories ... from 1 of 1 file(s)" read as a loss).
        assert f"from 0 of 1 file(s); 1 {MSG_QUEUED_TOTAL}." in cli.stdout

        rows = stack.sql("SELECT status, dispatched_at FROM ingest_upload ORDER BY id")
        assert rows == [("queued", None)] * 3

        stack.redis.start()
        stack.worker()
        report = stack.sweep()
        assert report["dispatched"]["upload"] == 3

        def all_done():
            statuses = [s for (s,) in stack.sql("SELECT status FROM ingest_upload")]
            return statuses if all(s in ("done", "failed") for s in statuses) else None

        assert wait_for(all_done, timeout=90, what="the three uploads") == ["done"] * 3
        assert stack.one("SELECT COUNT(*) FROM ingest_trajectory") == 18

        def refreshed():
            return stack.one("SELECT COUNT(*) FROM pipeline_projectrefresh WHERE status = 'done'")

        wait_for(refreshed, timeout=120, what="the project's refresh")
        assert (
            stack.one("SELECT COUNT(*) FROM pipeline_projectrefresh WHERE status = 'failed'") == 0
        )
