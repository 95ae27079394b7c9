"""Between full clustering runs: place the wrong steps of a few new or changed rollouts.

``analysis.clustering._assign_new`` assigns new wrong steps too, but it gathers every wrong
step of the project to find the new ones. The pipeline's incremental refresh knows which
rollouts are new, so this reads only their steps: the work grows with them, not with the
project. The same rules decide when a full re-clustering is due instead.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analysis.cache import DatabaseEmbeddingCache
from analysis.clustering import (
    REPRESENTATION,
    assigned_memberships_replace,
    label_targets,
    last_full_run,
)
from analysis.core.cluster import NOISE
from analysis.core.pipeline import (
    FittedPipeline,
    assign_wrong_steps,
    canonical_order,
    labelled_count,
    should_recluster,
)
from analysis.core.steps import Source, WrongStep
from analysis.gather import gather_wrong_steps
from analysis.model_store import load_model
from analysis.models import ClusteringRun, RunKind, RunStatus, WrongStepMembership
from ingest.models import Step
from projects.models import Project

# A full run's fitted model keeps what HDBSCAN needs to place new points, which grows with
# the steps it clustered: unpickled for every closing rollout it would be the cost that
# grows with the project. A worker keeps the last few it loaded (a new full run has a new
# id, so a stale model is never used).
MODELS_KEPT = 4
_models: OrderedDict[tuple[int, str], FittedPipeline] = OrderedDict()


def _labelled_now(project: Project, ids: list[int], wanted: Iterable[WrongStep]) -> int:
    """The project's labelled wrong steps once these rollouts' are replaced by ``wanted``."""
    others = (
        WrongStepMembership.objects.filter(project=project, source=Source.LABEL)
        .exclude(step__trajectory_id__in=ids)
        .count()
    )
    return others + labelled_count(list(wanted))


def _model(run: ClusteringRun | None) -> FittedPipeline | None:
    if run is None or not run.model_file:
        return None
    key = (run.pk, run.model_file)
    if key in _models:
        _models.move_to_end(key)
        return _models[key]
    model = load_model(run)
    if model is not None:
        _models[key] = model
        while len(_models) > MODELS_KEPT:
            _models.popitem(last=False)
    return model


def misbehaviours_assign_rollouts(*, project_id: int, rollout_ids: Collection[int]) -> bool:
    """Between full runs, place the wrong steps of these new or changed rollouts only (the
    work grows with them, not with the project); False, doing nothing, when a full
    re-clustering is due instead (the same rules as ``project_misbehaviours_refresh``).

    The misbehaviours' descriptions and the successes' assignments are left as the last
    run made them: both read every member, so they wait for the next full refresh.
    """
    project = Project.objects.get(pk=project_id)
    all_failed_steps = settings.FAULTLINE_CLUSTER_ALL_FAILED_STEPS
    last_full = last_full_run(project)
    model = _model(last_full)
    if (
        model is None
        or last_full is None
        or last_full.backend != settings.FAULTLINE_EMBEDDINGS
        or bool(last_full.params.get("all_failed_steps")) != all_failed_steps
        or last_full.params.get("representation") != REPRESENTATION
    ):
        return False
    latest = (
        ClusteringRun.objects.filter(project=project, status=RunStatus.DONE)
        .order_by("-finished_at", "-id")
        .first()
    )
    ids = sorted(set(rollout_ids))
    gathered = gather_wrong_steps(project, all_failed_steps=all_failed_steps, rollout_ids=ids)
    wanted = {step.key: step for step in canonical_order(gathered.wrong)}
    # The rollouts' steps first: filtered by project, SQLite walks every membership of it.
    step_ids = list(Step.objects.filter(trajectory_id__in=ids).values_list("pk", flat=True))
    existing = {
        str(step_id)
        for step_id in WrongStepMembership.objects.filter(step_id__in=step_ids).values_list(
            "step_id", flat=True
        )
    }
    stale = sorted(int(key) for key in existing - set(wanted))
    new_steps = [step for key, step in wanted.items() if key not in existing]
    current = (latest.wrong_step_count if latest else 0) + len(new_steps) - len(stale)
    labelled = (
        last_full.params.get("labelled_steps")
        if isinstance(last_full.params.get("labelled_steps"), int)
        else None
    )
    labelled_now = None if labelled is None else _labelled_now(project, ids, wanted.values())
    if should_recluster(
        clustered_at_last_run=last_full.wrong_step_count,
        current=current,
        labelled_at_last_run=labelled,
        labelled=labelled_now or 0,
    ):
        return False
    cache = DatabaseEmbeddingCache()
    labels, strengths, coords = assign_wrong_steps(model, new_steps, cache=cache)
    label_to_target = label_targets(project, last_full.label_keys)
    now = timezone.now()
    with transaction.atomic():
        run = ClusteringRun.objects.create(
            project=project,
            kind=RunKind.INCREMENTAL,
            status=RunStatus.DONE,
            stage="done",
            progress=1.0,
            backend=last_full.backend,
            base_run=last_full,
            params=last_full.params,
            label_keys=last_full.label_keys,
            wrong_step_count=current,
            assigned_count=len(new_steps),
            clustered_count=int(np.sum(labels != NOISE)),
            metrics={
                "new_steps": len(new_steps),
                "removed_steps": len(stale),
                "rollouts": len(ids),
            },
            started_at=now,
            finished_at=now,
        )
        assigned_memberships_replace(
            run,
            stale=stale,
            new_steps=new_steps,
            assignment=(labels, strengths, coords),
            label_keys=last_full.label_keys,
            label_to_target=label_to_target,
        )
    return True
