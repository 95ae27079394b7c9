"""Full or incremental: which refresh a request gets, and the incremental chain itself.

Live rollouts close one by one all day; recomputing the whole project for each would
make the refresh's cost grow with the project. Between two full refreshes the labels,
and so the scorer and its calibration, do not change: a new failed rollout gets what a
full refresh would give it from the stored scorer and tau. So a refresh is incremental
(only the new and changed rollouts: their action deviations, derived labels,
attribution, wrong steps and overview share) unless something it reuses is out of date:

- a full refresh was asked for: a label was added or changed (pipeline.refresh, on the
  label's commit), or by hand;
- there is no earlier full refresh to build on, or its stored scorer or calibration is gone;
- the project's miscoverage, gold-action calibration or borrowing settings changed;
- the project grew by a quarter since the last full refresh (``GROWTH``, the same rule as
  the clustering's): the project-wide statistics that a full refresh fits (the action
  analysis's regression, which tools are outcome-neutral, the labelling queue's order
  across systems) drift with the data, and recomputing them at every quarter costs a
  bounded multiple of an incremental refresh per rollout (a full refresh costs about N,
  and comes once per N/4 new rollouts);
- labels arrived with the new rollouts (a data set's), or a new agent system appeared,
  or a system whose part of the labelling queue was short got new rollouts;
- the derived labels (gold actions, sibling divergence) of the new rollouts would change
  what the scorer trains or calibrates on by a quarter, would bring the project to the
  labels that train the learned scorer, or would give a label to a system that still
  needs labels for its confidence claim. Fewer derived labels than that wait for the next
  full refresh: leaving a few calibration labels out keeps the promise (the calibration
  labels stay exchangeable with the new rollouts), it only makes the sets a little wider.

Which rollouts are new or changed: those of the uploads that finished since the last
successful refresh started (``MARGIN`` earlier: workers' clocks differ, and an upload's
row is stamped just after its rollouts commit), those of the live traces assembled since
then, and those the requests named (an outcome attached later).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from analysis.assign_rollouts import misbehaviours_assign_rollouts
from analysis.clustering import project_misbehaviours_refresh
from attribution.action_analysis import rollouts_action_deviations_refresh
from attribution.core.system_calibration import labels_needed, system_key
from attribution.incremental import rollouts_attribute
from attribution.label_sources_refresh import rollouts_derived_labels_refresh
from attribution.refresh_basis import AttributionBasis
from attribution.services import MIN_TRAINING_LABELS, SCORING_RULES
from ingest.core.records import LabelSource, Outcome
from ingest.models import Label, LiveTrace, LiveTraceState, Trajectory, Upload, UploadStatus
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.rollouts import STREAM_UPLOAD_SHA256
from pipeline.models import ProjectRefresh, RefreshKind, RefreshStatus
from pipeline.overview_counts import overview_counts_update
from projects.models import Project

GROWTH = 0.25
MARGIN = timedelta(seconds=60)

REASON_ASKED = "a full refresh was asked for"
REASON_FIRST = "no earlier full refresh to build on"
REASON_MISCOVERAGE = "the miscoverage changed"
REASON_GOLD_SETTING = "the gold-action calibration setting changed"
REASON_BORROW = "the calibration borrowing changed"
REASON_SCORING_RULES = "the scoring code changed since the last full refresh"
REASON_GROWTH = "the project grew by a quarter since the last full refresh"
REASON_NEW_SYSTEM = "a new agent system: {system}"
REASON_SHORT_QUEUE = "new rollouts of {system}, whose labelling queue was short"
REASON_LABELS_ARRIVED = "labels arrived with the new rollouts"
REASON_DERIVED = "the derived labels changed: {why}"
REASON_BASIS_GONE = "the stored scorer or calibration is gone"
REASON_INCREMENTAL = "{count} new or changed rollouts"


@dataclass
class RefreshPlan:
    kind: str
    reason: str
    # What this refresh stores on its row: a full one its whole basis, an incremental one
    # the id of the full refresh it built on and its counters since then.
    basis: dict[str, Any] = field(default_factory=dict)
    rollout_ids: list[int] = field(default_factory=list)
    uploads_seen: list[int] = field(default_factory=list)
    # The basis of the full refresh an incremental one builds on.
    full: dict[str, Any] = field(default_factory=dict)
    full_id: int | None = None


def last_done_refresh(project_id: int) -> ProjectRefresh | None:
    """The latest successful refresh that left a basis (refreshes from before this module
    left none: the first one after them is full). The (project, status, started) index
    finds it without reading the project's earlier refreshes."""
    return (
        ProjectRefresh.objects.filter(project_id=project_id, status=RefreshStatus.DONE)
        .exclude(basis={})
        .order_by("-started_at")
        .first()
    )


def _full_row(last: ProjectRefresh) -> ProjectRefresh | None:
    if "attribution" in last.basis:
        return last
    full = ProjectRefresh.objects.filter(
        pk=last.basis.get("full"), project_id=last.project_id
    ).first()
    return full if full is not None and "attribution" in full.basis else None


def window_uploads(project_id: int, since: datetime) -> list[int]:
    """The project's file uploads that finished since ``since`` (not the live stream's)."""
    return sorted(
        Upload.objects.filter(
            project_id=project_id, status=UploadStatus.DONE, finished_at__gte=since
        )
        .exclude(sha256=STREAM_UPLOAD_SHA256)
        .values_list("pk", flat=True)
    )


def _live_rollouts(project_id: int, since: datetime) -> set[int]:
    """Rollouts of live traces assembled since ``since``. The index is on (state, last
    span): a trace is assembled at the latest when it is abandoned, so the traces whose last
    span is older than that are not read; the work grows with the traffic of the last hour,
    not with the project."""
    config = ReceiverConfig.from_env()
    oldest = since - timedelta(seconds=config.abandon_after_seconds) - MARGIN
    found: set[int] = set()
    for state in (LiveTraceState.OPEN, LiveTraceState.CLOSED):
        rows = LiveTrace.objects.filter(
            state=state, last_span_at__gte=oldest, assembled_at__gte=since
        ).values_list("project_id", "rollout_id")
        found |= {rollout for project, rollout in rows if project == project_id and rollout}
    return found


def _failed_since(refresh: ProjectRefresh, last: ProjectRefresh) -> list[tuple[bool, str, Any]]:
    """(full asked for, why, rollouts named) of the requests whose refresh failed since the
    last successful one: what they asked for is asked again."""
    return list(
        ProjectRefresh.objects.filter(
            project_id=refresh.project_id,
            status=RefreshStatus.FAILED,
            created_at__gte=(last.started_at or last.created_at) - MARGIN,
        ).values_list("full_requested", "request_reason", "rollout_ids")
    )


def _named_rollouts(refresh: ProjectRefresh, failed: list[tuple[bool, str, Any]]) -> set[int]:
    """Rollouts the requests named: this one's, and those of refreshes that failed since."""
    named = {int(pk) for pk in refresh.rollout_ids or []}
    for _, _, ids in failed:
        named |= {int(pk) for pk in ids or []}
    return named


def _settings_changed(project: Project, attribution: AttributionBasis) -> str:
    if attribution.scoring_rules != SCORING_RULES:
        return REASON_SCORING_RULES
    if not math.isclose(project.miscoverage, attribution.alpha):
        return REASON_MISCOVERAGE
    if bool(project.gold_actions_calibrate) != attribution.gold_actions_calibrate:
        return REASON_GOLD_SETTING
    if dict(project.calibration_borrow or {}) != attribution.calibration_borrow:
        return REASON_BORROW
    return ""


def refresh_plan(refresh: ProjectRefresh) -> RefreshPlan:
    """Full or incremental, why, and the rollouts an incremental refresh touches."""
    project = Project.objects.get(pk=refresh.project_id)
    if refresh.full_requested:
        return RefreshPlan(RefreshKind.FULL, refresh.request_reason or REASON_ASKED)
    last = last_done_refresh(project.pk)
    full_row = _full_row(last) if last is not None else None
    if last is None or full_row is None:
        return RefreshPlan(RefreshKind.FULL, REASON_FIRST)
    basis = full_row.basis
    attribution = AttributionBasis.from_dict(basis["attribution"])
    changed = _settings_changed(project, attribution)
    if changed:
        return RefreshPlan(RefreshKind.FULL, changed)
    failed = _failed_since(refresh, last)
    for full_requested, reason, _ in failed:
        if full_requested:
            return RefreshPlan(RefreshKind.FULL, reason or REASON_ASKED)
    since = (last.started_at or last.created_at) - MARGIN
    seen_before = set(last.basis.get("uploads_seen", []))
    uploads = window_uploads(project.pk, since)
    fresh_uploads = [pk for pk in uploads if pk not in seen_before]
    from_uploads = set(
        Trajectory.objects.filter(upload_id__in=fresh_uploads).values_list("pk", flat=True)
    )
    ids = sorted(
        from_uploads | _live_rollouts(project.pk, since) | _named_rollouts(refresh, failed)
    )
    since_full = dict(last.basis["since_full"])
    plan = RefreshPlan(
        RefreshKind.INCREMENTAL,
        "",
        {"full": full_row.pk, "since_full": since_full},
        ids,
        uploads,
        full=basis,
        full_id=full_row.pk,
    )
    grown = since_full["rollouts"] + len(ids)
    if grown > 0 and grown >= GROWTH * basis["rollouts"]:
        return _full(plan, REASON_GROWTH)
    failed_systems = {
        system_key(system)
        for system in Trajectory.objects.filter(pk__in=ids, outcome=Outcome.FAILURE).values_list(
            "agent_system", flat=True
        )
    }
    for system in sorted(failed_systems):
        if system not in attribution.systems:
            return _full(plan, REASON_NEW_SYSTEM.format(system=system))
        if system in attribution.short_systems:
            return _full(plan, REASON_SHORT_QUEUE.format(system=system))
    arrived = Label.objects.filter(
        trajectory_id__in=sorted(from_uploads), source__in=(LabelSource.HUMAN, LabelSource.DATASET)
    )
    if arrived.exists():
        return _full(plan, REASON_LABELS_ARRIVED)
    plan.reason = REASON_INCREMENTAL.format(count=len(ids))
    return plan


def _full(plan: RefreshPlan, reason: str) -> RefreshPlan:
    plan.kind, plan.reason = RefreshKind.FULL, reason
    return plan


def derived_labels_force_full(
    basis: dict[str, Any],
    changed: dict[str, list[int]],
    pending: int,
    pending_by_system: dict[str, int] | None = None,
) -> str:
    """Why the derived labels changed since the full refresh force a full one ("" when they
    do not): ``pending`` of them in all, ``pending_by_system`` by agent system."""
    attribution = AttributionBasis.from_dict(basis["attribution"])
    labelled = attribution.labelled
    if attribution.labelled_by_system:
        # Each system with enough labels of its own gets its own scorer.
        for system, count in sorted((pending_by_system or {}).items()):
            before = attribution.labelled_by_system.get(system, 0)
            if before < MIN_TRAINING_LABELS <= before + count:
                return REASON_DERIVED.format(why=f"enough labels to train {system}'s own scorer")
    elif labelled < MIN_TRAINING_LABELS <= labelled + pending:
        return REASON_DERIVED.format(why="enough labels to train the learned scorer")
    if pending > 0 and pending >= GROWTH * labelled:
        return REASON_DERIVED.format(why="a quarter more labels")
    if attribution.gold_actions_calibrate and changed.get(LabelSource.GOLD_ACTIONS):
        calibrating = Trajectory.objects.filter(
            pk__in=changed[LabelSource.GOLD_ACTIONS], outcome=Outcome.FAILURE
        ).values_list("agent_system", flat=True)
        counts = attribution.per_system.get("labels_by_system", {})
        min_labels = int(attribution.per_system.get("min_labels", 0))
        for system in {system_key(s) for s in calibrating}:
            if labels_needed(counts.get(system, 0), attribution.alpha, min_labels) > 0:
                return REASON_DERIVED.format(why=f"{system} still needs calibration labels")
    return ""


def incremental_run(
    refresh: ProjectRefresh, plan: RefreshPlan, beat: Callable[[str], None]
) -> RefreshPlan:
    """The chain for the plan's rollouts only; returns the plan as it ran (it may turn
    full when the derived labels say so: the caller then runs the full chain)."""
    project_id = refresh.project_id
    ids = plan.rollout_ids
    since_full = dict(plan.basis["since_full"])
    beat("action analysis")
    rollouts_action_deviations_refresh(project_id=project_id, rollout_ids=ids)
    derived = rollouts_derived_labels_refresh(
        project_id=project_id,
        rollout_ids=ids,
        neutral_tools=plan.full.get("neutral_tools", []),
    )
    relabelled = sorted({pk for pks in (derived.changed if derived else {}).values() for pk in pks})
    pending = since_full["labels"] + len(relabelled)
    by_system = Counter(dict(since_full.get("labels_by_system", {})))
    by_system.update(
        system_key(system)
        for system in Trajectory.objects.filter(
            pk__in=relabelled, outcome=Outcome.FAILURE
        ).values_list("agent_system", flat=True)
    )
    why = derived_labels_force_full(
        plan.full, derived.changed if derived else {}, pending, dict(by_system)
    )
    if why:
        return _full(plan, why)
    touched = sorted(set(ids) | set(relabelled))
    beat("attribution")
    try:
        rollouts_attribute(
            project_id=project_id,
            basis=AttributionBasis.from_dict(plan.full["attribution"]),
            rollout_ids=touched,
        )
    except LookupError:  # attribution.incremental.BasisGone
        return _full(plan, REASON_BASIS_GONE)
    beat("clustering")
    if not misbehaviours_assign_rollouts(project_id=project_id, rollout_ids=touched):
        project_misbehaviours_refresh(project_id=project_id, origin=refresh.job_name)
    beat("overview")
    overview_counts_update(project_id=project_id, rollout_ids=touched, with_deleted=True)
    since_full["rollouts"] += len(ids)
    since_full["labels"] = pending
    since_full["labels_by_system"] = dict(sorted(by_system.items()))
    plan.basis = {"full": plan.full_id, "since_full": since_full, "uploads_seen": plan.uploads_seen}
    plan.rollout_ids = touched
    return plan


def full_basis(
    *,
    project_id: int,
    attribution: AttributionBasis | None,
    neutral_tools: list[str],
    uploads_seen: list[int],
) -> dict[str, Any]:
    """What a full refresh leaves for the incremental ones after it."""
    if attribution is None:
        return {}
    return {
        "attribution": attribution.to_dict(),
        "neutral_tools": neutral_tools,
        "rollouts": Trajectory.objects.filter(project_id=project_id).count(),
        "uploads_seen": uploads_seen,
        "since_full": {"rollouts": 0, "labels": 0},
    }
