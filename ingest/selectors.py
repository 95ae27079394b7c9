"""Reads of the ingest app: filtered rollout lists, one rollout's steps, uploads."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from analysis.models import WrongStepMembership
from analysis.selectors import active_misbehaviours
from attribution.models import TrajectoryAttribution
from projects.models import Project
from ingest.columns import STEP_COLUMNS
from ingest.core.records import LabelRecord, StepRecord, TrajectoryRecord
from ingest.models import Label, Step, Trajectory, Upload

SORTS = {
    "newest": "-id",
    "oldest": "id",
    "steps": "step_count",
    "-steps": "-step_count",
    "reward": "reward",
    "-reward": "-reward",
    "task": "task_id",
    "environment": "environment",
    "model": "policy_model",
}
SORT_LABELS = [
    ("oldest", "upload order"),
    ("newest", "newest first"),
    ("-steps", "most steps"),
    ("steps", "fewest steps"),
    ("reward", "lowest reward"),
    ("-reward", "highest reward"),
    ("task", "task"),
    ("environment", "environment"),
    ("model", "model"),
]
# Size of the attribution's prediction set: (value in the URL, label, lowest, highest).
SET_SIZES = [
    ("empty", "empty set", None, None),
    ("1", "1 step", 1, 1),
    ("2-5", "2–5 steps", 2, 5),
    ("6-20", "6–20 steps", 6, 20),
    ("21+", "21 steps or more", 21, None),
]
SET_SIZE_LABELS = [(value, label) for value, label, _, _ in SET_SIZES]


@dataclass
class RolloutFilters:
    outcome: str = ""
    environment: str = ""
    policy_model: str = ""
    q: str = ""
    labelled: str = ""  # "yes", "no" or ""
    task_id: str = ""
    upload: int | None = None
    misbehaviour: int | None = None
    set_size: str = ""
    sort: str = "oldest"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: dict[str, str]) -> RolloutFilters:
        upload_raw = params.get("upload", "")
        misbehaviour_raw = params.get("misbehaviour", "")
        set_size = params.get("set_size", "").strip()
        sort = params.get("sort", "oldest")
        return cls(
            outcome=params.get("outcome", "").strip(),
            environment=params.get("environment", "").strip(),
            policy_model=params.get("model", "").strip(),
            q=params.get("q", "").strip()[:200],
            labelled=params.get("labelled", "").strip(),
            task_id=params.get("task", "").strip(),
            upload=int(upload_raw) if upload_raw.isdigit() else None,
            misbehaviour=int(misbehaviour_raw) if misbehaviour_raw.isdigit() else None,
            set_size=set_size if set_size in {v for v, _, _, _ in SET_SIZES} else "",
            sort=sort if sort in SORTS else "oldest",
        )


def rollouts_filtered(*, project: Project, filters: RolloutFilters) -> QuerySet[Trajectory]:
    rollouts = Trajectory.objects.filter(project=project)
    if filters.outcome:
        rollouts = rollouts.filter(outcome=filters.outcome)
    if filters.environment:
        rollouts = rollouts.filter(environment=filters.environment)
    if filters.policy_model:
        rollouts = rollouts.filter(policy_model=filters.policy_model)
    if filters.task_id:
        rollouts = rollouts.filter(task_id=filters.task_id)
    if filters.upload:
        rollouts = rollouts.filter(upload_id=filters.upload)
    if filters.q:
        rollouts = rollouts.filter(
            Q(task_text__icontains=filters.q)
            | Q(external_id__icontains=filters.q)
            | Q(task_id__icontains=filters.q)
        )
    if filters.misbehaviour:
        rollouts = _with_misbehaviour(rollouts, filters.misbehaviour)
    if filters.set_size:
        rollouts = _with_set_size(rollouts, filters.set_size)
    has_label = Exists(Label.objects.filter(trajectory=OuterRef("pk")))
    if filters.labelled == "yes":
        rollouts = rollouts.filter(has_label)
    elif filters.labelled == "no":
        rollouts = rollouts.exclude(has_label)
    return rollouts.annotate(has_label=has_label).order_by(SORTS[filters.sort], "id")


def _with_misbehaviour(rollouts: QuerySet[Trajectory], misbehaviour: int) -> QuerySet[Trajectory]:
    """Rollouts with a step in this misbehaviour."""
    members = WrongStepMembership.objects.filter(
        misbehaviour_id=misbehaviour, step__trajectory=OuterRef("pk")
    )
    return rollouts.filter(Exists(members))


def _with_set_size(rollouts: QuerySet[Trajectory], value: str) -> QuerySet[Trajectory]:
    """Rollouts whose prediction set has this many steps."""
    _, _, lowest, highest = next(s for s in SET_SIZES if s[0] == value)
    sets = TrajectoryAttribution.objects.filter(trajectory=OuterRef("pk"))
    if lowest is None:
        return rollouts.filter(Exists(sets.filter(lo__isnull=True)))
    sized = (
        sets.filter(lo__isnull=False)
        .annotate(set_steps=F("hi") - F("lo") + 1)
        .filter(set_steps__gte=lowest)
    )
    if highest is not None:
        sized = sized.filter(set_steps__lte=highest)
    return rollouts.filter(Exists(sized))


def project_facets(*, project: Project) -> dict[str, list[Any]]:
    """Distinct environments and models, for the filter drop-downs."""
    base = Trajectory.objects.filter(project=project)
    return {
        # order_by() drops the default ordering, which DISTINCT would otherwise include.
        "environments": sorted(
            e for e in base.order_by().values_list("environment", flat=True).distinct() if e
        ),
        "models": sorted(
            m for m in base.order_by().values_list("policy_model", flat=True).distinct() if m
        ),
        # (id, name) for the rollouts filter, largest first.
        "misbehaviours": [(m.pk, str(m)) for m in active_misbehaviours(project)[:300]],
    }


def project_counts(*, project: Project) -> dict[str, int]:
    base = Trajectory.objects.filter(project=project)
    totals = base.aggregate(
        rollouts=Count("id"),
        failed=Count("id", filter=Q(outcome="failure")),
        succeeded=Count("id", filter=Q(outcome="success")),
    )
    totals["labelled"] = (
        Label.objects.filter(trajectory__project=project).values("trajectory").distinct().count()
    )
    return {key: int(value or 0) for key, value in totals.items()}


def rollout_for_project(*, project: Project, pk: int) -> Trajectory:
    return Trajectory.objects.select_related("upload").get(project=project, pk=pk)


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
    return list(Label.objects.filter(trajectory=rollout).select_related("author"))


def uploads_for_project(*, project: Project) -> QuerySet[Upload]:
    return Upload.objects.filter(project=project).select_related("uploaded_by")


EXPORT_BATCH = 200


def step_record(step: Step) -> StepRecord:
    """A stored step back as the record the parsers made."""
    return StepRecord(
        index=step.index,
        role=step.role,
        kind=step.kind,
        content=step.content,
        agent=step.agent,
        tool_name=step.tool_name,
        tool_args=step.tool_args,
        tool_call_id=step.tool_call_id,
        is_error=step.is_error,
        is_mutating=step.is_mutating,
        started_at=step.started_at,
        ended_at=step.ended_at,
        metadata=step.metadata,
    )


def step_records_by_rollout(
    ids: list[int], *, kinds: tuple[str, ...] = ()
) -> dict[int, list[StepRecord]]:
    """The stored steps of these rollouts as records, in step order (only ``kinds`` if given)."""
    found: dict[int, list[StepRecord]] = {i: [] for i in ids}
    steps = Step.objects.filter(trajectory_id__in=ids)
    if kinds:
        steps = steps.filter(kind__in=kinds)
    # Plain rows, not model instances: building a Step per row was half an export's time.
    fields = STEP_COLUMNS[1:]
    rows = steps.order_by("trajectory_id", "index").values_list("trajectory_id", *fields)
    for rollout_id, *values in rows.iterator(chunk_size=2000):
        found[rollout_id].append(StepRecord(**dict(zip(fields, values, strict=True))))
    return found


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
            yield TrajectoryRecord(
                external_id=row.external_id,
                task_id=row.task_id,
                task_text=row.task_text,
                environment=row.environment,
                agent_system=row.agent_system,
                policy_model=row.policy_model,
                outcome=row.outcome,
                reward=row.reward,
                metadata=row.metadata,
                steps=steps_by_rollout[row.pk],
                labels=labels_by_rollout[row.pk],
            )
