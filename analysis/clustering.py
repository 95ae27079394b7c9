"""Clustering runs of a project: a full re-clustering or the assignment of new wrong steps.

``project_misbehaviours_refresh`` chooses between a full re-clustering (no model yet,
the wrong steps grew by a quarter, or the embedding backend changed) and assigning the
new wrong steps to the existing misbehaviours with the last full run's stored model.
Misbehaviour rows are keyed by a stable key matched on member overlap, so a user's
name, merge and category survive every re-clustering.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analysis.cache import DatabaseEmbeddingCache, embedding_cache_prune
from analysis.core.cluster import NOISE
from analysis.core.identity import match_clusters
from analysis.core.pipeline import (
    FittedPipeline,
    assign_wrong_steps,
    canonical_order,
    cluster_wrong_steps,
    labelled_count,
    should_recluster,
)
from analysis.core.steps import WrongStep
from analysis.gather import GatheredSteps, gather_wrong_steps
from analysis.merges import resolve_merged
from analysis.misbehaviour_stats import misbehaviour_stats_refresh
from analysis.model_store import load_model, store_model
from analysis.models import (
    ClusteringRun,
    Misbehaviour,
    RunKind,
    RunStatus,
    WrongStepMembership,
)
from ingest.jobs import Superseded, job_beat, job_claim, job_dispatch, job_update
from projects.models import Project

logger = logging.getLogger(__name__)

RUN_BUSY_FOR = 3600  # seconds a queued/running run blocks another request
BATCH = 2000
#: What a step is clustered as (analysis.core.representation); a model fitted on another
#: representation cannot place new steps, so a change forces a full run.
# v2: the structural block (role, step kind, tool); v3: each part masked before it is
# cut, so values no longer decide which words are embedded; v4: short capitalised codes
# in prose (airports, tickers) masked too; v7 (v5 and v6 were trials not adopted): no
# label reason in the embedded text, and new steps gated by a misbehaviour's signals; v8:
# written arguments have no source, claimed_success; v9: code known by its syntax too;
# v11 (v10 changed signals, not the vector): reported_unmade_change, a new clustered signal
# v13: unread_edit, a new clustered signal (v12 changed signals, not the vector)
# v14: edited_failing_test, a new clustered signal
# v15: where argument values come from reads numbers deep in long pages, never computes an
# identifier, and takes a tool's own option words (scroll "down") as no value to source
# v16: unchecked_approval, a new clustered signal
# v17: a rollout's only agent is compared by its role (analysis.core.steps.actor)
# v18: a date in ISO form of one told in words ("Friday 4 April") is sourced, not invented
# v19: a change reported as "you're booked", "is confirmed" or a reference given counts as
# reported; a reply that says a payment was declined acknowledges the error
# v20: a conclusion citing a web address nothing seen or read gave is an unsupported claim
# v21: a message that only passes the turn to another agent is no repeated action
REPRESENTATION = "behaviour-v21"


def _progress(run: ClusteringRun):
    def report(stage: str, fraction: float) -> None:
        run.stage, run.progress = stage, round(0.1 + 0.7 * fraction, 3)
        job_beat(run, stage=run.stage, progress=run.progress)

    return report


def _memberships(
    run: ClusteringRun,
    steps: list[WrongStep],
    labels: np.ndarray,
    probabilities: np.ndarray,
    coords: np.ndarray,
    *,
    label_to_target: dict[int, int | None],
    label_keys: dict[str, str],
    assigned: bool = False,
) -> list[WrongStepMembership]:
    """One unsaved membership row per step; noise (label -1) gets no misbehaviour or key."""
    rows = []
    for position, step in enumerate(steps):
        label = int(labels[position])
        rows.append(
            WrongStepMembership(
                project_id=run.project_id,
                run=run,
                step_id=int(step.key),
                misbehaviour_id=label_to_target.get(label) if label != NOISE else None,
                cluster_key=label_keys.get(str(label), "") if label != NOISE else "",
                source=step.source,
                weight=step.weight,
                probability=float(probabilities[position]),
                assigned=assigned,
                x=float(coords[position, 0]),
                y=float(coords[position, 1]),
                signals=list(step.signals),
                arg_sources=[list(pair) for pair in step.arg_sources],
                error=step.error,
                preceded_by=step.preceded_by[:120],
                one_agent=step.one_agent,
            )
        )
    return rows


def label_targets(project: Project, label_keys: dict[str, str]) -> dict[int, int | None]:
    """The misbehaviour (merges followed) each cluster label of a run now stands for."""
    by_key = {m.key: m for m in Misbehaviour.objects.filter(project=project)}
    by_pk = {m.pk: m for m in by_key.values()}
    targets: dict[int, int | None] = {}
    for raw_label, key in label_keys.items():
        target = resolve_merged(by_key.get(key), by_pk)
        targets[int(raw_label)] = target.pk if target else None
    return targets


def assigned_memberships_replace(
    run: ClusteringRun,
    *,
    stale: list[int],
    new_steps: list[WrongStep],
    assignment: tuple[np.ndarray, np.ndarray, np.ndarray],
    label_keys: dict[str, str],
    label_to_target: dict[int, int | None],
) -> None:
    """Drop the memberships of steps no longer wrong and store the new steps' assigned
    ones (labels, strengths, coordinates from the last full run's model). Step ids are
    unique across projects, so the delete needs no project filter (with one, SQLite walks
    every membership of the project)."""
    for start in range(0, len(stale), BATCH):
        WrongStepMembership.objects.filter(step_id__in=stale[start : start + BATCH]).delete()
    labels, strengths, coords = assignment
    rows = _memberships(
        run,
        new_steps,
        labels,
        strengths,
        coords,
        label_to_target=label_to_target,
        label_keys=label_keys,
        assigned=True,
    )
    WrongStepMembership.objects.bulk_create(rows, batch_size=BATCH)


def last_full_run(project: Project) -> ClusteringRun | None:
    return (
        ClusteringRun.objects.filter(project=project, kind=RunKind.FULL, status=RunStatus.DONE)
        .order_by("-finished_at", "-id")
        .first()
    )


def project_misbehaviours_refresh(
    *,
    project_id: int,
    run_id: int | None = None,
    force_full: bool = False,
    all_failed_steps: bool | None = None,
    origin: str = "",
) -> None:
    """Cluster (or assign) the project's wrong steps and store the misbehaviours.

    Runs that are already done are left alone, so a task delivered twice does nothing.
    Called by another job without a run (``origin`` names that job, e.g. "refresh 12"),
    it takes over the unfinished run that job started before: a redelivered refresh
    claims the run its lost attempt left "running", which would otherwise hold back every
    request for the project's misbehaviours until the reaper. A finished one is left as
    it is and a new run starts, since what the refresh clusters may have changed.
    """
    project = Project.objects.get(pk=project_id)
    if run_id is None:
        started = (
            ClusteringRun.objects.filter(
                project=project, origin=origin, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
            )
            .order_by("-pk")
            .values_list("pk", flat=True)
            .first()
            if origin
            else None
        )
        run_id = started or ClusteringRun.objects.create(project=project, origin=origin).pk
    # Every delivery claims the run under a new attempt (a redelivered task whose worker was
    # lost takes over); a finished run is left alone, so a task delivered twice does nothing.
    claimed = job_claim(ClusteringRun, run_id, stage="gathering", progress=0.02)
    if claimed is None or claimed.project_id != project.pk:
        return
    run = claimed
    if all_failed_steps is None:
        all_failed_steps = settings.FAULTLINE_CLUSTER_ALL_FAILED_STEPS
    try:
        gathered = gather_wrong_steps(project, all_failed_steps=all_failed_steps)
        backend = settings.FAULTLINE_EMBEDDINGS
        last_full = last_full_run(project)
        model = None if force_full else load_model(last_full)
        full = (
            model is None
            or last_full is None
            or last_full.backend != backend
            or bool(last_full.params.get("all_failed_steps")) != all_failed_steps
            or last_full.params.get("representation") != REPRESENTATION
            or should_recluster(
                clustered_at_last_run=last_full.wrong_step_count,
                current=len(gathered.wrong),
                labelled_at_last_run=last_full.params.get("labelled_steps"),
                labelled=labelled_count(gathered.wrong),
            )
        )
        if full:
            _recluster(run, gathered, backend=backend, all_failed_steps=all_failed_steps)
        else:
            assert last_full is not None and model is not None
            _assign_new(run, gathered, base_run=last_full, model=model)
        run.stage, run.progress = "describing", 0.9
        job_beat(run, stage=run.stage, progress=run.progress)
        misbehaviour_stats_refresh(project=project)
        run.status, run.stage, run.progress, run.finished_at = (
            RunStatus.DONE,
            "done",
            1.0,
            timezone.now(),
        )
        # The last write only as the latest attempt: a run taken over meanwhile stops here.
        job_beat(run)
        run.save()
    except Superseded:
        logger.info("clustering run %s attempt %s was superseded", run.pk, run.attempt)
    except Exception as error:
        logger.exception("misbehaviour refresh failed for project %s", project_id)
        run.status, run.finished_at = RunStatus.FAILED, timezone.now()
        run.error_message = f"{type(error).__name__}: {error}"[:2000]
        if job_update(run):
            run.save(update_fields=["status", "finished_at", "error_message"])
        raise


def _lift_assignments(
    model: FittedPipeline, gathered: GatheredSteps, label_to_target: dict[int, int | None]
) -> dict[int, set[str]]:
    """The lift sample's rollouts (successful and failed) containing each misbehaviour
    (target id), by assignment of every agent action."""
    found: dict[int, set[str]] = defaultdict(set)
    compared = [*gathered.success, *gathered.failure]
    if not compared:
        return found
    labels, _, _ = assign_wrong_steps(model, compared, cache=DatabaseEmbeddingCache())
    for step, label in zip(compared, labels.tolist()):
        target = label_to_target.get(int(label))
        if label != NOISE and target is not None:
            found[target].add(step.rollout)
    return found


def _store_lift_sample(
    project: Project, found: dict[int, set[str]], failed: Collection[str] = ()
) -> None:
    """Each misbehaviour's assigned rollouts of the lift sample, by outcome (``failed``:
    the sampled failed rollouts)."""
    failed = set(failed)
    for misbehaviour in Misbehaviour.objects.filter(project=project):
        rollouts = sorted(found.get(misbehaviour.pk, set()), key=int)
        successes = [rollout for rollout in rollouts if rollout not in failed]
        failures = [rollout for rollout in rollouts if rollout in failed]
        if (successes, failures) != (misbehaviour.success_rollouts, misbehaviour.failure_rollouts):
            misbehaviour.success_rollouts = successes
            misbehaviour.failure_rollouts = failures
            misbehaviour.save(update_fields=["success_rollouts", "failure_rollouts"])


def _recluster(
    run: ClusteringRun, gathered: GatheredSteps, *, backend: str, all_failed_steps: bool
) -> None:
    project = run.project
    cache = DatabaseEmbeddingCache()
    outcome = cluster_wrong_steps(
        gathered.wrong,
        backend=backend,
        cache=cache,
        seed=0,
        progress=_progress(run),
        rollout_failed=gathered.rollout_failed,
        rollout_length=gathered.rollout_length,
        rollout_group=gathered.rollout_group,
    )
    previous: dict[str, set[str]] = defaultdict(set)
    for key, step_id in (
        WrongStepMembership.objects.filter(project=project)
        .exclude(cluster_key="")
        .values_list("cluster_key", "step_id")
    ):
        previous[key].add(str(step_id))
    current: dict[int, set[str]] = defaultdict(set)
    for step, label in zip(outcome.steps, outcome.labels.tolist()):
        if label != NOISE:
            current[int(label)].add(step.key)
    keys = match_clusters(previous, current)

    with transaction.atomic():
        existing = {m.key: m for m in Misbehaviour.objects.filter(project=project)}
        for key in keys.values():
            if key not in existing:
                existing[key] = Misbehaviour.objects.create(
                    project=project, key=key, first_run=run, last_run=run
                )
        Misbehaviour.objects.filter(project=project, key__in=list(keys.values())).update(
            last_run=run
        )
        by_pk = {m.pk: m for m in existing.values()}
        label_to_target: dict[int, int | None] = {}
        for label, key in keys.items():
            target = resolve_merged(existing[key], by_pk)
            label_to_target[label] = target.pk if target else None
        WrongStepMembership.objects.filter(project=project).delete()
        rows = _memberships(
            run,
            outcome.steps,
            outcome.labels,
            outcome.probabilities,
            outcome.coords,
            label_to_target=label_to_target,
            label_keys={str(label): key for label, key in keys.items()},
        )
        WrongStepMembership.objects.bulk_create(rows, batch_size=BATCH)
        run.kind = RunKind.FULL
        run.backend = backend
        run.params = {
            **outcome.model.params.as_dict(),
            "all_failed_steps": all_failed_steps,
            "representation": REPRESENTATION,
            "labelled_steps": labelled_count(outcome.steps),
        }
        run.metrics = {**outcome.metrics, "cache_hits": cache.hits, "cache_misses": cache.misses}
        run.label_keys = {str(label): key for label, key in keys.items()}
        run.wrong_step_count = len(outcome.steps)
        run.clustered_count = int(np.sum(outcome.labels != NOISE))
        store_model(run, outcome.model)
        run.save()
    run.stage, run.progress = "assigning the lift sample", 0.85
    run.save(update_fields=["stage", "progress"])
    _store_lift_sample(
        project,
        _lift_assignments(outcome.model, gathered, label_to_target),
        gathered.sampled_failure,
    )
    namespace = getattr(outcome.model.embedder, "namespace_", None)
    if namespace:
        embedding_cache_prune(keep_namespaces=[namespace])


def _assign_new(
    run: ClusteringRun, gathered: GatheredSteps, *, base_run: ClusteringRun, model: FittedPipeline
) -> None:
    project = run.project
    wanted = {step.key: step for step in canonical_order(gathered.wrong)}
    existing = set(
        str(step_id)
        for step_id in WrongStepMembership.objects.filter(project=project).values_list(
            "step_id", flat=True
        )
    )
    stale = [int(key) for key in existing - set(wanted)]
    new_steps: list[WrongStep] = [step for key, step in wanted.items() if key not in existing]
    run.stage, run.progress = "assigning", 0.3
    run.save(update_fields=["stage", "progress"])
    cache = DatabaseEmbeddingCache()
    labels, strengths, coords = assign_wrong_steps(model, new_steps, cache=cache)
    label_to_target = label_targets(project, base_run.label_keys)
    with transaction.atomic():
        assigned_memberships_replace(
            run,
            stale=stale,
            new_steps=new_steps,
            assignment=(labels, strengths, coords),
            label_keys=base_run.label_keys,
            label_to_target=label_to_target,
        )
        run.kind = RunKind.INCREMENTAL
        run.backend = base_run.backend
        run.base_run = base_run
        run.params = base_run.params
        run.label_keys = base_run.label_keys
        run.wrong_step_count = len(wanted)
        run.assigned_count = len(new_steps)
        run.clustered_count = int(np.sum(labels != NOISE))
        run.metrics = {
            "steps": len(wanted),
            "new_steps": len(new_steps),
            "removed_steps": len(stale),
            "cache_hits": cache.hits,
            "cache_misses": cache.misses,
        }
        run.save()
    _store_lift_sample(
        project, _lift_assignments(model, gathered, label_to_target), gathered.sampled_failure
    )


def misbehaviours_refresh_request(*, project: Project, force_full: bool = False) -> ClusteringRun:
    """Queue a refresh (one at a time per project) and start it after the commit."""
    busy_since = timezone.now() - timedelta(seconds=RUN_BUSY_FOR)
    busy = ClusteringRun.objects.filter(
        project=project,
        status__in=[RunStatus.QUEUED, RunStatus.RUNNING],
        created_at__gte=busy_since,
    ).first()
    if busy is not None:
        return busy
    run = ClusteringRun.objects.create(project=project, params={"force_full": force_full})

    transaction.on_commit(lambda: clustering_dispatch(run))
    return run


def clustering_dispatch(run: ClusteringRun) -> bool:
    """Send the run to a worker; with the broker down it stays queued for the sweeper."""
    from analysis.tasks import misbehaviours_refresh_task

    force_full = bool(run.params.get("force_full"))
    return job_dispatch(
        ClusteringRun,
        run.pk,
        lambda: misbehaviours_refresh_task.delay(run.project_id, run.pk, force_full),
    )
