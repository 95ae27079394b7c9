"""One stuck upload (claimed by a worker that hangs: running, silent past the heartbeat
timeout, never finishing) and one failed upload never hold the project's refresh back:
another upload finishing queues a refresh, and a real worker runs it. (An upload whose
heartbeat is still fresh is on its way and leaves the refresh to itself: pipeline.refresh.)"""

from __future__ import annotations

import pytest

from tests.pipeline.faults_support import faultline_stack
from tests.pipeline.faults_traces import native_jsonl
from tests.pipeline.test_faults_worker_lost import submit, wait_finished
from tests.services import wait_for

pytestmark = pytest.mark.services

STUCK_AND_FAILED = """
import json
from datetime import timedelta
from django.conf import settings
from django.utils import timezone
from ingest.jobs import job_claim
from ingest.models import Upload
from ingest.services import upload_create
from projects.models import Project
project = Project.objects.get(slug="faults")
ids = []
for name in ({stuck!r}, {failed!r}):
    with open(name, "rb") as stream:
        ids.append(upload_create(project=project, stream=stream,
                                 original_name=name.rsplit("/", 1)[1]).upload.pk)
job_claim(Upload, ids[0])  # claimed by a worker that hangs: running, then silent
silent = timezone.now() - timedelta(seconds=settings.FAULTLINE_JOB_HEARTBEAT_TIMEOUT_S + 60)
Upload.objects.filter(pk=ids[0]).update(heartbeat_at=silent, started_at=silent)
Upload.objects.filter(pk=ids[1]).update(status="failed", error_message="broken",
                                        finished_at=timezone.now())
print("JSON=" + json.dumps(ids))
"""


def test_it_refreshes_the_project_beside_a_stuck_and_a_failed_upload(tmp_path):
    paths = [
        native_jsonl(tmp_path / f"{name}.jsonl", rollouts=4, steps=4, tag=name)
        for name in ("stuck", "failed", "fresh")
    ]
    with faultline_stack(tmp_path / "stack") as stack:
        stuck, failed = stack.shell_json(
            STUCK_AND_FAILED.format(stuck=str(paths[0]), failed=str(paths[1]))
        )
        stack.worker()
        fresh = submit(stack, paths[2])
        assert wait_finished(stack, "ingest_upload", fresh)[0] == "done"

        refresh = wait_for(
            lambda: (
                row := stack.one(
                    "SELECT status FROM pipeline_projectrefresh ORDER BY id DESC LIMIT 1"
                )
            )
            in ("done", "failed")
            and row,
            timeout=120,
            what="the project's refresh",
        )
        assert refresh == "done"
        statuses = dict(stack.sql("SELECT id, status FROM ingest_upload"))
        assert (statuses[stuck], statuses[failed]) == ("running", "failed")
