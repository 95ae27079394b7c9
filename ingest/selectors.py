"""Reads of the ingest app: filtered rollout lists, one rollout's steps, uploads."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Count, Exists, F, Min, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast

from ingest.columns import STEP_RECORD_FIELDS
from ingest.core.records import LabelRecord, LabelSource, StepRecord, TrajectoryRecord
from ingest.lookups import FoldedHolds, HoldsText, needs_folding
from ingest.models import Label, LiveTrace, Step, Trajectory, Upload
from projects.models import Project

_T = TypeVar("_T")


def project_counts(*, project: Project) -> dict[str, int]:
    base = Trajectory.objects.filter(project=project)
    # Counts of outcome (never empty), not of id: PostgreSQL then reads the (project,
    # outcome, ...) index alone instead of every rollout's row.
    totals = base.aggregate(
        rollouts=Count("outcome"),
        failed=Count("outcome", filter=Q(outcome="failure")),
        succeeded=Count("outcome", filter=Q(outcome="success")),
    )
    # The labelled ones in one more query: both counts in the same pass.
    has_label = Exists(Label.objects.filter(trajectory=OuterRef("pk")))
    totals |= base.filter(has_label).aggregate(
        labelled=Count("outcome"),
        labelled_by_rule=Count("outcome", filter=~Q(own_label_exists())),
    )
    return {key: int(value or 0) for key, value in totals.items()}


def own_label_exists() -> Exists:
    """Whether a rollout has a label a person or its data set gave (not one a rule derived
    from the rollouts, ``LabelSource.DERIVED``): a rollout labelled only by a rule has a
    label and not this."""
    return Exists(
        Label.objects.filter(trajectory=OuterRef("pk")).exclude(source__in=LabelSource.DERIVED)
    )


def latest_rollout_id(*, project_id: int) -> int | None:
    """The project's newest rollout id (one seek on (project, id)): tells whether a stored
    count still holds every rollout."""
    return (
        Trajectory.objects.filter(project_id=project_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


DISTINCT_COLUMNS = ("environment", "policy_model", "agent_system")


def rollout_distinct_values(
    *, project: Project, column: str, outcome: str | None = None
) -> list[str]:
    """The distinct values of one of ``DISTINCT_COLUMNS`` among the project's rollouts (of
    one outcome if given), sorted, blanks included.

    A skip scan: each value is the smallest one above the previous, one index seek each
    ((project, environment), (project, policy_model), (project, outcome, agent_system)),
    so a 50k-rollout project with three environments costs three seeks, not a pass over
    every rollout as ``DISTINCT`` does. The same SQL runs on SQLite and PostgreSQL.
    """
    if column not in DISTINCT_COLUMNS:
        raise ValueError(f"not a column with distinct values: {column}")
    table = Trajectory._meta.db_table
    scope = "project_id = %s" + (" AND outcome = %s" if outcome is not None else "")
    params: list[int | str] = [project.pk] + ([outcome] if outcome is not None else [])
    sql = (
        f"WITH RECURSIVE found(found_value) AS ("
        f" SELECT MIN({column}) FROM {table} WHERE {scope}"
        f" UNION ALL"
        f" SELECT (SELECT MIN({column}) FROM {table} WHERE {scope} AND {column} > found.found_value)"
        f" FROM found WHERE found.found_value IS NOT NULL"
        f") SELECT found_value FROM found WHERE found_value IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params + params)
        return sorted(row[0] for row in cursor.fetchall())


def steps_calling(tool: str) -> QuerySet[Step]:
    """The steps that name this tool, through the partial index ``step_tool_name`` (its
    condition repeated so that SQLite uses it); narrowed to ``trajectory=OuterRef("pk")``
    it asks whether a rollout calls the tool, one index seek per rollout."""
    return Step.objects.filter(tool_name=tool, tool_name__gt="").order_by()


def steps_saying(text: str) -> QuerySet[Step]:
    """The steps whose text or call arguments hold ``text``, ignoring case: what the
    rollouts list's "a step says" filter finds, and the rollout page marks.

    Arguments are matched in their stored JSON, against ``text`` written as a JSON string
    writes it (quotes and backslashes escaped; SQLite keeps JSON in ASCII, PostgreSQL's
    jsonb prints characters as they are), so a value with a quote or an accent is found on
    both databases. No index serves it: a search reads the steps of the rollouts it
    looks at (docs/benchmarks.md, "Pages"), which keeps every upload's writes as fast
    as they were."""
    arguments = Cast("tool_args", TextField())
    if needs_folding(text):  # SQLite's LIKE folds ASCII letters only
        in_json = json.dumps(text, ensure_ascii=False)[1:-1]
        return Step.objects.filter(
            Q(FoldedHolds(F("content"), text))
            | Q(FoldedHolds(arguments, in_json, stored_json=True))
        ).order_by()
    in_arguments = json.dumps(text, ensure_ascii=connection.vendor == "sqlite")[1:-1]
    return Step.objects.filter(
        HoldsText(F("content"), text) | HoldsText(arguments, in_arguments)
    ).order_by()


def first_steps_saying(text: str, rollout_ids: Iterable[int]) -> dict[int, Step]:
    """For each of these rollouts that has one, its first step that says ``text`` (as
    :func:`steps_saying` finds it): the step the rollouts list quotes and links to."""
    firsts = (
        steps_saying(text)
        .filter(trajectory_id__in=list(rollout_ids))
        .values("trajectory_id")
        .annotate(first=Min("index"))
        .values_list("trajectory_id", "first")
    )
    wanted = Q()
    for rollout_id, index in firsts:
        wanted |= Q(trajectory_id=rollout_id, index=index)
    if not wanted:
        return {}
    steps = Step.objects.filter(wanted).only(
        "trajectory_id", "index", "agent", "role", "content", "tool_name", "tool_args"
    )
    return {step.trajectory_id: step for step in steps}


def steps_failed() -> QuerySet[Step]:
    """The steps marked as an error, through the partial index ``step_error``."""
    return Step.objects.filter(is_error=True).order_by()


def rollout_for_project(*, project: Project, pk: int) -> Trajectory:
    return Trajectory.objects.select_related("upload", "project").get(project=project, pk=pk)


def rollout_live_trace(*, rollout: Trajectory) -> LiveTrace | None:
    """The live trace a rollout sent over OTLP is built from (None for an uploaded one):
    whether it is still open, and spans that arrived after its last rebuild."""
    return LiveTrace.objects.filter(rollout=rollout).order_by("-pk").first()


def rollout_parentless_steps(*, rollout: Trajectory, limit: int) -> list[int]:
    """Up to ``limit`` + 1 indexes of the rollout's steps whose span names a parent span
    that never arrived (``ingest.core.spans.tree_order``): spans were lost on the way, a
    batch refused or dropped by the exporter, or cut out of an export."""
    return list(
        Step.objects.filter(trajectory=rollout, metadata__parent_missing=True)
        .order_by("index")
        .values_list("index", flat=True)[: limit + 1]
    )


def rollout_steps(
    *, rollout: Trajectory, start: int = 0, stop: int | None = None
) -> QuerySet[Step]:
    steps = Step.objects.filter(trajectory=rollout).order_by("index")
    if start:
        steps = steps.filter(index__gte=start)
    if stop is not None:
        steps = steps.filter(index__lt=stop)
    return steps


def rollout_labels(*, rollout: Trajectory) -> list[Label]:
    return list(Label.objects.filter(trajectory=rollout).select_related("author", "token"))


def usable_labels(labels: QuerySet[Label]) -> QuerySet[Label]:
    """The labels whose step lies within their rollout (a rollout cut short after it was
    labelled keeps a label past its end, which judges nothing)."""
    return labels.filter(step_index__lt=F("trajectory__step_count"))


def _decisive(rows: Iterable[tuple[int, str, _T]]) -> dict[int, _T]:
    """(rollout id, source, item) in the order the labels were made -> each rollout's item
    of the label it is judged by (``LabelSource.prefers``: a human label beats a data
    set's, the newest among equals)."""
    chosen: dict[int, tuple[str, _T]] = {}
    for trajectory_id, source, item in rows:
        current = chosen.get(trajectory_id)
        if current is None or LabelSource.prefers(source, current[0]):
            chosen[trajectory_id] = (source, item)
    return {trajectory_id: item for trajectory_id, (_, item) in chosen.items()}


def decisive_labels(labels: QuerySet[Label]) -> dict[int, Label]:
    """The one label each rollout is judged by, among its :func:`usable_labels`. Callers
    narrow ``labels`` (a project, failed rollouts, some ids)."""
    ordered = usable_labels(labels.select_related(None)).order_by("created_at", "id")
    return _decisive((label.trajectory_id, label.source, label) for label in ordered)


def decisive_label_values(labels: QuerySet[Label], *fields: str) -> dict[int, tuple[Any, ...]]:
    """As :func:`decisive_labels`, but only these fields (or annotations) of each chosen
    label, read as plain rows: tens of thousands of Label objects were most of an
    overview counted in the request."""
    ordered = usable_labels(labels.select_related(None)).order_by("created_at", "id")
    rows = ordered.values_list("trajectory_id", "source", *fields)
    return _decisive((row[0], row[1], tuple(row[2:])) for row in rows.iterator(chunk_size=5000))


def uploads_for_project(*, project: Project) -> QuerySet[Upload]:
    return Upload.objects.filter(project=project).select_related("uploaded_by")


EXPORT_BATCH = 200


def step_record(step: Step) -> StepRecord:
    """A stored step back as the record the parsers made."""
    return StepRecord(**{name: getattr(step, name) for name in STEP_RECORD_FIELDS})


def step_records_by_rollout(
    ids: list[int],
    *,
    kinds: tuple[str, ...] = (),
    roles: tuple[str, ...] = (),
    fields: tuple[str, ...] = STEP_RECORD_FIELDS,
) -> dict[int, list[StepRecord]]:
    """The stored steps of these rollouts as records, in step order (only those of
    ``kinds`` or ``roles`` if either is given; only ``fields`` filled, the rest at their
    defaults)."""
    found: dict[int, list[StepRecord]] = {i: [] for i in ids}
    steps = Step.objects.filter(trajectory_id__in=ids)
    if kinds or roles:
        steps = steps.filter(Q(kind__in=kinds) | Q(role__in=roles))
    # Plain rows, not model instances: building a Step per row was half an export's time.
    rows = steps.order_by("trajectory_id", "index").values_list("trajectory_id", *fields)
    for rollout_id, *values in rows.iterator(chunk_size=2000):
        found[rollout_id].append(StepRecord(**dict(zip(fields, values, strict=True))))
    return found


def trajectory_record(
    row: Trajectory, steps: list[StepRecord], labels: list[LabelRecord] | None = None
) -> TrajectoryRecord:
    """A stored rollout back as the record the parsers made (with these steps and labels)."""
    return TrajectoryRecord(
        external_id=row.external_id,
        task_id=row.task_id,
        task_text=row.task_text,
        environment=row.environment,
        agent_system=row.agent_system,
        policy_model=row.policy_model,
        outcome=row.outcome,
        reward=row.reward,
        metadata=row.metadata,
        steps=steps,
        labels=labels or [],
    )


def rollout_records(rollouts: QuerySet[Trajectory]) -> Iterator[TrajectoryRecord]:
    """Stored rollouts back as records, in batches so memory stays flat on big exports."""
    ids = list(rollouts.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), EXPORT_BATCH):
        batch_ids = ids[start : start + EXPORT_BATCH]
        rows = Trajectory.objects.filter(id__in=batch_ids).order_by("id")
        steps_by_rollout = step_records_by_rollout(batch_ids)
        labels_by_rollout: dict[int, list[LabelRecord]] = {i: [] for i in batch_ids}
        for label in Label.objects.filter(trajectory_id__in=batch_ids).order_by("created_at", "id"):
            labels_by_rollout[label.trajectory_id].append(
                LabelRecord(
                    step=label.step_index,
                    agent=label.agent,
                    reason=label.reason,
                    source=label.source,
                )
            )
        for row in rows:
            yield trajectory_record(row, steps_by_rollout[row.pk], labels_by_rollout[row.pk])
