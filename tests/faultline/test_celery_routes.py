"""Each kind of task goes to its named queue, and a worker without -Q consumes them all."""

from __future__ import annotations

import pytest

from faultline.celery import DEFAULT_QUEUE, WORK_QUEUES, app

EXPECTED_QUEUES = {
    "pipeline.tasks.ingest_upload": "ingest",
    "attribution.tasks.attribution_refresh": "attribution",
    "analysis.misbehaviours_refresh": "analysis",
    "exports.tasks.run_export": "export",
    "pipeline.tasks.refresh_project": "analysis",
    "faultline.some_maintenance_task": DEFAULT_QUEUE,
    "pipeline.tasks.jobs_sweep": DEFAULT_QUEUE,
}


@pytest.mark.parametrize(("task_name", "queue"), sorted(EXPECTED_QUEUES.items()))
def test_it_routes_each_task_to_its_queue(task_name, queue):
    assert app.amqp.router.route({}, task_name)["queue"].name == queue


def test_it_routes_every_registered_task_of_the_work_apps_to_a_work_queue():
    app.loader.import_default_modules()
    apps = ("ingest.", "attribution.", "analysis.", "exports.", "pipeline.", "dashboard.")
    maintenance = {"pipeline.tasks.jobs_sweep", "pipeline.tasks.close_quiet_traces"}
    ours = [name for name in app.tasks if name.startswith(apps) and name not in maintenance]
    assert ours, "no Faultline task registered"
    routed = {name: app.amqp.router.route({}, name)["queue"].name for name in ours}
    assert {name for name, queue in routed.items() if queue not in WORK_QUEUES} == set()


def test_it_lets_a_worker_without_queue_options_consume_every_queue():
    assert {queue.name for queue in app.conf.task_queues} == {*WORK_QUEUES, DEFAULT_QUEUE}


def test_beat_runs_the_sweeper_on_the_maintenance_queue():
    from django.conf import settings

    entry = settings.FAULTLINE_CELERY_BEAT_SCHEDULE["faultline-jobs-sweep"]
    assert (
        entry["task"] == "pipeline.tasks.jobs_sweep" and entry["options"]["queue"] == DEFAULT_QUEUE
    )
    assert "pipeline.tasks.jobs_sweep" in app.tasks
