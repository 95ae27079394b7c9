"""The overview's aggregates kept as counters, moved by each rollout's share.

``pipeline.overview.overview_aggregates`` groups and counts the whole project: a few
hundred milliseconds at 50k rollouts, the part of a refresh that grew with the project
once attribution and clustering only touched the new rollouts. Here each rollout's share
(its environment and model, whether it failed, the position buckets of its labels, its
point estimate and its deviation, its length stratum and its use of each tool) is stored once (``OverviewContribution``); a full
refresh rebuilds every share and the counters from them, an incremental one takes back
the old shares of the rollouts it touched and adds their new ones. Running either twice
changes nothing, and the data stored has the same shape as ``overview_aggregates``'s.

The same move keeps the overview's cards current between refreshes: the closing sweep
moves the live rollouts assembled since the last one (pipeline.overview_pending) and
``overview_counts_add_upload`` runs when an upload finishes (pipeline.tasks), so the overview
request reads the cards and never counts the project (pipeline.overview_cards). The
cards' ``last_rollout`` is the newest rollout whose share they hold, so a rollout stored
but not yet counted shows as newer. Every writer locks the overview's row before it
touches the shares, in that order, so two of them (a live assembly's and a refresh's)
wait for each other instead of deadlocking.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef

from analysis.core.tool_stats import add_rollout, empty_tool_counts, stratum_of, tool_rows
from attribution.models import RolloutDeviation, TrajectoryAttribution
from ingest.core.records import LabelSource, Outcome
from ingest.models import Label, Trajectory, Upload
from ingest.selectors import decisive_label_values
from pipeline.models import OverviewContribution, ProjectOverview
from pipeline.overview import POSITION_BUCKETS, UPLOADS_SHOWN, position_bucket, tool_use
from pipeline.overview_cards import CARD_KEYS
from projects.models import Project

SERIES_LABELLED = "labelled decisive step"
SERIES_PREDICTED = "attribution point estimate"
SERIES_DEVIATION = "earliest mutating deviation"
SERIES = (SERIES_LABELLED, SERIES_PREDICTED, SERIES_DEVIATION)
BATCH = 2000
SEPARATOR = "\x1f"
# The counters' shape: 2 keeps [rollouts, failed, succeeded] per environment and model and
# per upload (a failure rate counts only rollouts with an outcome). Stored counters of
# another shape are rebuilt, not moved; 3 adds the card of rollouts labelled by a rule only;
# 4 counts one labelled position per rollout (its decisive label), not one per label; 5
# adds the tools table (analysis.core.tool_stats); 6 marks its rows of few rollouts.
COUNTS_VERSION = 6


def _shares(project_id: int, ids: list[int] | None) -> list[OverviewContribution]:
    """The current share of each rollout (all of the project's when ``ids`` is None), read
    ``BATCH`` ids at a time (a 50k-rollout upload's ids would pass SQLite's bound on
    parameters)."""
    if ids is not None and len(ids) > BATCH:
        return [
            share
            for start in range(0, len(ids), BATCH)
            for share in _shares(project_id, ids[start : start + BATCH])
        ]
    rollouts = Trajectory.objects.filter(project_id=project_id)
    if ids is not None:
        rollouts = rollouts.filter(pk__in=ids)
    rows = rollouts.order_by().values_list(
        "id", "upload_id", "environment", "policy_model", "outcome", "step_count"
    )
    shares: dict[int, OverviewContribution] = {}
    lengths: dict[int, int] = {}
    for pk, upload_id, environment, model, outcome, length in rows:
        lengths[pk] = int(length or 0)
        shares[pk] = OverviewContribution(
            trajectory_id=pk,
            project_id=project_id,
            upload_id=upload_id,
            environment=environment,
            policy_model=model,
            failed=outcome == Outcome.FAILURE,
            succeeded=outcome == Outcome.SUCCESS,
            stratum=stratum_of(environment, lengths[pk]),
        )
    for pk, tools in tool_use(project_id=project_id, ids=ids).items():
        if pk in shares:
            shares[pk].tools = tools

    def scoped(queryset: Any) -> Any:
        if ids is None:
            return queryset.filter(trajectory__project_id=project_id)
        return queryset.filter(trajectory_id__in=ids)

    labels = scoped(Label.objects.all()).order_by()
    given: set[int] = set()
    for pk, source in labels.values_list("trajectory_id", "source"):
        if pk in shares:
            shares[pk].labelled = True
        if source not in LabelSource.DERIVED:
            given.add(pk)
    # One position per rollout, its decisive label's, as pipeline.overview counts it.
    for pk, (step_index,) in decisive_label_values(labels, "step_index").items():
        bucket = position_bucket(step_index, lengths.get(pk, 0))
        if pk in shares and bucket is not None:
            shares[pk].label_buckets.append(bucket)
    predicted = scoped(TrajectoryAttribution.objects.all()).order_by()
    for pk, step in predicted.values_list("trajectory_id", "point_step"):
        if pk in shares:
            shares[pk].predicted_bucket = position_bucket(step, lengths[pk])
    deviations = scoped(RolloutDeviation.objects.all()).order_by()
    for pk, step in deviations.values_list("trajectory_id", "decisive_step"):
        if pk in shares and shares[pk].failed:
            shares[pk].deviation_bucket = position_bucket(step, lengths[pk])
    for share in shares.values():
        share.label_buckets.sort()
        share.labelled_by_rule = share.labelled and share.trajectory_id not in given
    return list(shares.values())


def _empty_counts() -> dict[str, Any]:
    return {
        "version": COUNTS_VERSION,
        "failures": {},
        "positions": {s: [0] * POSITION_BUCKETS for s in SERIES},
        "uploads": {},
        "cards": dict.fromkeys(CARD_KEYS, 0),
        "tools": empty_tool_counts(),
    }


def _add(counts: dict[str, Any], shares: Iterable[OverviewContribution], sign: int) -> None:
    failures, positions, uploads = counts["failures"], counts["positions"], counts["uploads"]
    cards = counts["cards"]
    for share in shares:
        cards["rollouts"] += sign
        cards["failed"] += sign * share.failed
        cards["succeeded"] += sign * share.succeeded
        cards["labelled"] += sign * share.labelled
        cards["labelled_by_rule"] += sign * share.labelled_by_rule
        key = f"{share.environment}{SEPARATOR}{share.policy_model}"
        upload_key = str(share.upload_id)
        for row in (failures.setdefault(key, [0, 0, 0]), uploads.setdefault(upload_key, [0, 0, 0])):
            row[0] += sign
            row[1] += sign * share.failed
            row[2] += sign * share.succeeded
        for bucket in share.label_buckets:
            positions[SERIES_LABELLED][bucket] += sign
        if share.predicted_bucket is not None:
            positions[SERIES_PREDICTED][share.predicted_bucket] += sign
        if share.deviation_bucket is not None:
            positions[SERIES_DEVIATION][share.deviation_bucket] += sign
        add_rollout(
            counts["tools"],
            tools=share.tools or {},
            stratum=share.stratum,
            failed=share.failed,
            succeeded=share.succeeded,
            sign=sign,
        )
    for table in (failures, uploads):
        for key in [k for k, pair in table.items() if pair[0] <= 0]:
            del table[key]


def _rendered(project_id: int, counts: dict[str, Any], last_rollout: int | None) -> dict[str, Any]:
    """The counters in the shape ``overview_aggregates`` returns, plus the counters."""
    failures = []
    for key in sorted(counts["failures"], key=lambda k: tuple(k.split(SEPARATOR, 1))):
        environment, model = key.split(SEPARATOR, 1)
        total, failed, succeeded = counts["failures"][key]
        failures.append(
            {
                "environment": environment or "(none)",
                "policy_model": model or "(none)",
                "total": total,
                "failed": failed,
                "succeeded": succeeded,
            }
        )
    positions = {s: list(v) for s, v in counts["positions"].items() if any(v)}
    uploads: list[dict[str, Any]] = [
        dict(row)
        for row in Upload.objects.filter(project_id=project_id, trajectory_count__gt=0)
        .order_by("-created_at", "-id")
        .values("id", "original_name", "created_at")[:UPLOADS_SHOWN]
    ]
    uploads.reverse()
    for row in uploads:
        total, failed, succeeded = counts["uploads"].get(str(row["id"]), [0, 0, 0])
        row.update(total=total, failed=failed, succeeded=succeeded)
        row["created_at"] = row["created_at"].isoformat() if row["created_at"] else ""
    # The newest rollout the cards hold: one stored since shows as newer on the page.
    cards = {**counts["cards"], "last_rollout": last_rollout}
    return {
        "failures": failures,
        "positions": positions,
        "uploads": uploads,
        "counts": counts,
        "cards": cards,
        "tools": tool_rows(counts["tools"]),
    }


def overview_counts_rebuild(*, project_id: int) -> ProjectOverview | None:
    """Every rollout's share stored again and the counters summed from them (full refresh)."""
    if not Project.objects.filter(pk=project_id).exists():
        return None
    shares = _shares(project_id, None)
    counts = _empty_counts()
    _add(counts, shares, +1)
    last_rollout = max((share.trajectory_id for share in shares), default=None)
    # The row first, so that it can be locked before the shares are (see the module's doc).
    ProjectOverview.objects.get_or_create(project_id=project_id)
    with transaction.atomic():
        overview = ProjectOverview.objects.select_for_update().get(project_id=project_id)
        OverviewContribution.objects.filter(project_id=project_id).delete()
        OverviewContribution.objects.bulk_create(shares, batch_size=BATCH)
        overview.data = _rendered(project_id, counts, last_rollout)
        overview.save(update_fields=["data", "computed_at"])
    return overview


def _deleted_since_counted(project_id: int) -> list[int]:
    """Rollouts whose share the counters hold but which no longer exist: one pass over the
    project's shares (about 50 ms at 50k rollouts on SQLite), so the refresh asks, not
    every upload or live assembly."""
    alive = Trajectory.objects.filter(pk=OuterRef("trajectory_id"))
    shares = OverviewContribution.objects.filter(project_id=project_id).filter(~Exists(alive))
    return list(shares.values_list("trajectory_id", flat=True))


def overview_counts_update(
    *, project_id: int, rollout_ids: Collection[int], with_deleted: bool = False
) -> ProjectOverview:
    """Move the counters by the change of these rollouts' shares (incremental refresh);
    without stored counters yet, rebuild them. ``with_deleted``: also take back the shares
    of rollouts deleted since they were counted (an upload read again after a cut-short
    run first clears what that run stored); without it the cards and charts kept counting
    them until the next full refresh."""
    ids = sorted(set(rollout_ids))
    with transaction.atomic():
        overview = ProjectOverview.objects.select_for_update().filter(project_id=project_id).first()
        stored = (overview.data or {}).get("counts", {}) if overview is not None else {}
        if overview is None or "cards" not in stored or stored.get("version") != COUNTS_VERSION:
            rebuilt = overview_counts_rebuild(project_id=project_id)
            assert rebuilt is not None
            return rebuilt
        if with_deleted:
            # A deleted rollout has an old share and no new one: it is taken back below.
            ids = sorted(set(ids) | set(_deleted_since_counted(project_id)))
        old: list[OverviewContribution] = []
        for start in range(0, len(ids), BATCH):
            old += OverviewContribution.objects.filter(trajectory_id__in=ids[start : start + BATCH])
        new = _shares(project_id, ids)
        counts = overview.data["counts"]
        for series in SERIES:
            counts["positions"].setdefault(series, [0] * POSITION_BUCKETS)
        _add(counts, old, -1)
        _add(counts, new, +1)
        for start in range(0, len(ids), BATCH):
            OverviewContribution.objects.filter(
                trajectory_id__in=ids[start : start + BATCH]
            ).delete()
        OverviewContribution.objects.bulk_create(new, batch_size=BATCH)
        held = overview.data.get("cards", {}).get("last_rollout")
        new_ids = [share.trajectory_id for share in new]
        last_rollout = max(new_ids + ([int(held)] if held else []), default=None)
        overview.data = _rendered(project_id, counts, last_rollout)
        overview.save(update_fields=["data", "computed_at"])
    return overview


def overview_counts_upgrade() -> int | None:
    """Rebuild the counters of one project stored in an older shape (COUNTS_VERSION), so
    that what a new version adds (the tools table) appears after an upgrade without
    waiting for the project's next upload or label. Called by the periodic sweep, one
    project at a time (a rebuild reads the project's rollouts and tool steps); returns the
    project rebuilt, or None when every stored overview is current."""
    rows = ProjectOverview.objects.order_by("project_id").values_list(
        "project_id", "data__counts__version"
    )
    stale = next((pk for pk, version in rows if version != COUNTS_VERSION), None)
    if stale is None:
        return None
    overview_counts_rebuild(project_id=stale)
    return stale


def overview_counts_add_upload(*, project_id: int, upload_id: int) -> ProjectOverview | None:
    """Move the counters by the shares of a finished upload's rollouts (None when it
    holds none), so the cards hold them before the refresh that follows has run."""
    ids = list(Trajectory.objects.filter(upload_id=upload_id).values_list("pk", flat=True))
    if not ids:
        return None
    return overview_counts_update(project_id=project_id, rollout_ids=ids)
