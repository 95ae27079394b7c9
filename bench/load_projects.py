"""The two projects of bench/load.py, made in a Django process of their own (run by
bench/load.py with the run's DATABASE_URL): the big generated one and the small real one
that receives the uploads. Prints RESULT=<json> with the ids the simulated users open."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import SHARED_DATA  # noqa: E402

# The ids handed to the users: enough that 50 users rarely open the same rollout twice.
SAMPLE = 1000
SEED_FILES = ["tau_bench/historical_trajectories/gpt-4o-airline.json"] + [
    f"who_and_when/Who&When/Hand-Crafted/{n}.json" for n in range(1, 13)
]


def prepare(rollouts: int, steps: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from bench.pages import generate
    from exports.core.filters import parse_filters
    from exports.services import export_create, export_run
    from ingest.models import Trajectory
    from ingest.services import upload_create, upload_ingest
    from pipeline.overview import project_overview_refresh
    from pipeline.refresh import refresh_project_run
    from projects.models import Project
    from projects.services import project_create
    from projects.tokens import project_token_issue

    generated = generate(rollouts=rollouts, steps=steps)
    bench = Project.objects.get(slug="bench")
    project_overview_refresh(project_id=bench.pk)
    started = time.perf_counter()
    small = project_create(name="Uploads", slug="uploads", owner=get_user_model().objects.get())
    for relative in SEED_FILES:
        with (SHARED_DATA / relative).open("rb") as stream:
            outcome = upload_create(project=small, stream=stream, original_name=Path(relative).name)
        upload_ingest(upload_id=outcome.upload.pk)
    refresh_project_run(small.pk)
    for project in (bench, small):
        job = export_create(
            project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False
        )
        export_run(job_id=job.pk)
    failed = Trajectory.objects.filter(project=bench, outcome="failure").order_by("pk")
    tau = failed.filter(task_id__startswith="airline/")
    return {
        "project": generated,
        "small_project_seconds": round(time.perf_counter() - started, 1),
        "small_rollouts": small.trajectories.count(),
        "token": project_token_issue(project=small, name="load benchmark"),
        "rollouts": list(failed.values_list("pk", flat=True)[:SAMPLE]),
        "tau_rollouts": list(tau.values_list("pk", flat=True)[:200]),
        "long_rollout": Trajectory.objects.get(project=bench, external_id="long-multi-agent").pk,
        "misbehaviours": list(small.misbehaviours.values_list("pk", flat=True)[:50]),
        "small_rollout_pks": list(small.trajectories.values_list("pk", flat=True)[:200]),
    }


def main() -> None:
    import django

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    args = parser.parse_args()
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print("RESULT=" + json.dumps(prepare(args.rollouts, args.steps)), flush=True)


if __name__ == "__main__":
    main()
