"""The overview's project-wide aggregates, computed by the refresh and stored once.

Every function here costs a bounded number of queries whatever the project's size: the
database groups and counts, Python only shapes the few rows that come back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from django.db.models import Count, ExpressionWrapper, F, IntegerField, Q

from analysis.core.tool_stats import (
    add_rollout,
    empty_tool_counts,
    rollout_tool_use,
    stratum_of,
    tool_rows,
)
from attribution.models import RolloutDeviation, TrajectoryAttribution
from ingest.core.records import Outcome
from ingest.models import Label, Step, Trajectory, Upload
from ingest.selectors import decisive_label_values, latest_rollout_id, project_counts
from pipeline.models import ProjectOverview
from projects.models import Project

UPLOADS_SHOWN = 60
# Relative positions of decisive steps are counted in tenths of the rollout.
POSITION_BUCKETS = 10


def position_bucket(step: int | None, length: int) -> int | None:
    """The tenth of the rollout a step falls in, as the histograms' SQL computes it.

    Example:
        >>> position_bucket(0, 10), position_bucket(9, 10), position_bucket(3, 0)
        (0, 9, None)
    """
    if step is None or length <= 0:
        return None
    return min(max(step * POSITION_BUCKETS // length, 0), POSITION_BUCKETS - 1)


def failures_by_environment_model(*, project: Project) -> list[dict[str, Any]]:
    """Rollouts and failures per (environment, policy model)."""
    rows = (
        Trajectory.objects.filter(project=project)
        .values("environment", "policy_model")
        .annotate(
            total=Count("id"),
            failed=Count("id", filter=Q(outcome="failure")),
            succeeded=Count("id", filter=Q(outcome="success")),
        )
        .order_by("environment", "policy_model")
    )
    return [
        {
            "environment": row["environment"] or "(none)",
            "policy_model": row["policy_model"] or "(none)",
            "total": row["total"],
            "failed": row["failed"],
            "succeeded": row["succeeded"],
        }
        for row in rows
    ]


def _position_histogram(queryset: Any, step_field: str, length_field: str) -> list[int]:
    bucket = ExpressionWrapper(
        F(step_field) * POSITION_BUCKETS / F(length_field), output_field=IntegerField()
    )
    counts = [0] * POSITION_BUCKETS
    rows = (
        queryset.filter(**{f"{length_field}__gt": 0, f"{step_field}__isnull": False})
        .annotate(bucket=bucket)
        .values("bucket")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in rows:
        counts[min(max(int(row["bucket"]), 0), POSITION_BUCKETS - 1)] += row["n"]
    return counts


def decisive_positions(*, project: Project) -> dict[str, list[int]]:
    """Histograms of the decisive step's relative position (step / steps, in tenths).

    The label each rollout is judged by (one per rollout, as ``decisive_labels`` chooses
    it: a rollout with a dataset label and a human one counts once, where the chart
    counted both); the attribution's point estimates when that app stores them; the
    earliest decisive deviation from the gold actions when there is one.
    """
    series: dict[str, list[int]] = {}
    labelled = [0] * POSITION_BUCKETS
    # Each label carries its rollout's length from the same query: looking the lengths up
    # by id afterwards was a second query with every labelled rollout's id as one
    # parameter list (PostgreSQL's bound is 65,535 parameters, this SQLite's 250,000).
    labels = Label.objects.filter(trajectory__project=project).annotate(
        length=F("trajectory__step_count")
    )
    for step_index, length in decisive_label_values(labels, "step_index", "length").values():
        bucket = position_bucket(step_index, int(length or 0))
        if bucket is not None:
            labelled[bucket] += 1
    if any(labelled):
        series["labelled decisive step"] = labelled
    predicted = _position_histogram(
        TrajectoryAttribution.objects.filter(trajectory__project=project),
        "point_step",
        "trajectory__step_count",
    )
    if any(predicted):
        series["attribution point estimate"] = predicted
    deviations = _position_histogram(
        RolloutDeviation.objects.filter(trajectory__project=project, trajectory__outcome="failure"),
        "decisive_step",
        "trajectory__step_count",
    )
    if any(deviations):
        series["earliest mutating deviation"] = deviations
    return series


def failure_rate_by_upload(*, project: Project) -> list[dict[str, Any]]:
    """Failure rate of each of the latest uploads that hold rollouts, oldest first."""
    rows = list(
        Upload.objects.filter(project=project, trajectory_count__gt=0)
        .annotate(
            total=Count("trajectories"),
            failed=Count("trajectories", filter=Q(trajectories__outcome="failure")),
            succeeded=Count("trajectories", filter=Q(trajectories__outcome="success")),
        )
        .order_by("-created_at", "-id")
        .values("id", "original_name", "created_at", "total", "failed", "succeeded")[:UPLOADS_SHOWN]
    )
    rows.reverse()
    return rows


def tool_use(*, project_id: int, ids: Collection[int] | None) -> dict[int, dict[str, list[int]]]:
    """Each rollout's use of each tool (analysis.core.tool_stats), of these rollouts or of
    the whole project: only the steps that name a tool are read."""
    steps = Step.objects.exclude(tool_name="").order_by()
    if ids is None:
        steps = steps.filter(trajectory__project_id=project_id)
    else:
        steps = steps.filter(trajectory_id__in=list(ids))
    by_rollout: dict[int, list[tuple[str, str, bool, bool | None]]] = defaultdict(list)
    rows = steps.values_list("trajectory_id", "tool_name", "kind", "is_error", "is_mutating")
    for pk, name, kind, is_error, is_mutating in rows.iterator(chunk_size=5000):
        by_rollout[pk].append((name, kind, is_error, is_mutating))
    return {pk: rollout_tool_use(used) for pk, used in by_rollout.items()}


def tools_table(*, project: Project) -> list[dict[str, Any]]:
    """The tools table counted from the whole project (the counters' reference)."""
    counts = empty_tool_counts()
    used = tool_use(project_id=project.pk, ids=None)
    rollouts = Trajectory.objects.filter(project=project).order_by()
    for pk, environment, outcome, length in rollouts.values_list(
        "id", "environment", "outcome", "step_count"
    ).iterator(chunk_size=5000):
        add_rollout(
            counts,
            tools=used.get(pk, {}),
            stratum=stratum_of(environment, length or 0),
            failed=outcome == Outcome.FAILURE,
            succeeded=outcome == Outcome.SUCCESS,
            sign=1,
        )
    return tool_rows(counts)


def overview_aggregates(*, project: Project, tools: bool = True) -> dict[str, Any]:
    """Everything heavy the overview shows, as JSON-ready data (stored by the refresh).
    Without ``tools`` the tools table is left out: it reads every tool step of the
    project, which a request must not (the page then says the analysis will count it)."""
    uploads = failure_rate_by_upload(project=project)
    for row in uploads:
        row["created_at"] = row["created_at"].isoformat() if row["created_at"] else ""
    # The newest id first: a rollout stored while counting makes the page count afresh.
    last_rollout = latest_rollout_id(project_id=project.pk)
    aggregates = {
        "cards": {**project_counts(project=project), "last_rollout": last_rollout},
        "failures": failures_by_environment_model(project=project),
        "positions": decisive_positions(project=project),
        "uploads": uploads,
    }
    if tools:
        aggregates["tools"] = tools_table(project=project)
    return aggregates


def stored_overview(*, project: Project) -> tuple[dict[str, Any], Any]:
    """The aggregates the refresh task stored, and when; computed now if there are none
    yet (a project ingested without a refresh)."""
    overview = ProjectOverview.objects.filter(project=project).first()
    if overview is not None and overview.data:
        return overview.data, overview.computed_at
    return overview_aggregates(project=project, tools=False), None


def stored_tools(*, project: Project) -> tuple[list[dict[str, Any]] | None, Any]:
    """The tools table the refresh stored, and when; None before a refresh has counted
    it (never counted here: it reads every tool step of the project)."""
    overview = ProjectOverview.objects.filter(project=project).only("data", "computed_at").first()
    if overview is None or "tools" not in (overview.data or {}):
        return None, None
    return list(overview.data["tools"]), overview.computed_at


def stored_tool_names(*, project: Project, keep: str = "") -> list[str]:
    """The tools of the stored table, by name, for the rollouts filter. ``keep``: a name
    asked for in the URL, listed even when the table does not hold it."""
    rows, _ = stored_tools(project=project)
    names = {row["tool"] for row in rows or []}
    if keep:
        names.add(keep)
    return sorted(names)


def project_overview_refresh(*, project_id: int) -> ProjectOverview | None:
    """Aggregate the project for its overview page and store the result (idempotent)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    overview, _ = ProjectOverview.objects.update_or_create(
        project=project, defaults={"data": overview_aggregates(project=project)}
    )
    return overview
