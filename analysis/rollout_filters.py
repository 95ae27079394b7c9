"""The rollout list's filters, shared by the rollouts page, its download, the API and the
``export_rollouts`` command. They reach the stored rollouts (ingest), their prediction sets
(attribution) and their misbehaviours (analysis), so they live in the lowest app that
knows all three."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from analysis.models import WrongStepMembership
from analysis.selectors import active_misbehaviours, misbehaviours_now
from attribution.models import TrajectoryAttribution
from ingest.core.records import Outcome
from ingest.lookups import FoldedHolds, needs_folding
from ingest.models import Label, Trajectory
from ingest.selectors import (
    own_label_exists,
    rollout_distinct_values,
    steps_calling,
    steps_failed,
    steps_saying,
)
from projects.models import Project

# The longest text a search or a tool name filters by (the API's fields say the same).
SEARCH_CHARS = 200
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
# Whether a rollout has a labelled decisive step, and whose: "given" by a person or the data
# set, or derived by a rule only (gold actions, a successful sibling; LabelSource.DERIVED).
# Whether a rollout has a step marked as an error (a failed tool call or span); with a
# tool chosen too, a step of that tool (the tools table's error counts link there).
ERROR_CHOICES = [
    ("yes", "with an error step"),
    ("no", "without errors"),
]
LABELLED_CHOICES = [
    ("yes", "labelled"),
    ("given", "labelled by hand or data set"),
    ("rule", "labelled by a rule only"),
    ("no", "not labelled"),
]


@dataclass
class RolloutFilters:
    outcome: str = ""
    environment: str = ""
    policy_model: str = ""
    agent_system: str = ""
    q: str = ""
    says: str = ""  # text one of the rollout's steps holds (its content or call arguments)
    labelled: str = ""  # one of LABELLED_CHOICES' values or ""
    task_id: str = ""
    tool: str = ""  # a tool the rollout calls, by its exact name
    errors: str = ""  # one of ERROR_CHOICES' values or ""
    upload: int | None = None
    misbehaviour: int | None = None
    set_size: str = ""
    sort: str = "oldest"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def searches(self) -> bool:
        """Whether a filter reads text or steps, so that counting every match is a scan
        (the rollouts page then counts up to a cap)."""
        return bool(self.q or self.says or self.tool or self.errors)

    @classmethod
    def from_query(cls, params: dict[str, str]) -> RolloutFilters:
        upload_raw = params.get("upload", "")
        misbehaviour_raw = params.get("misbehaviour", "")
        set_size = params.get("set_size", "").strip()
        sort = params.get("sort", "oldest")
        labelled = params.get("labelled", "").strip()
        errors = params.get("errors", "").strip()
        return cls(
            outcome=params.get("outcome", "").strip(),
            environment=params.get("environment", "").strip(),
            policy_model=params.get("model", "").strip(),
            agent_system=params.get("system", "").strip(),
            q=search_text(params.get("q", "")),
            says=search_text(params.get("says", "")),
            labelled=labelled if labelled in {v for v, _ in LABELLED_CHOICES} else "",
            task_id=params.get("task", "").strip(),
            tool=search_text(params.get("tool", "")),
            errors=errors if errors in {v for v, _ in ERROR_CHOICES} else "",
            upload=int(upload_raw) if upload_raw.isdigit() else None,
            misbehaviour=int(misbehaviour_raw) if misbehaviour_raw.isdigit() else None,
            set_size=set_size if set_size in {v for v, _, _, _ in SET_SIZES} else "",
            sort=sort if sort in SORTS else "oldest",
        )


def search_text(raw: str) -> str:
    """A typed search or name as the filters use it: trimmed, at most ``SEARCH_CHARS``."""
    return raw.strip()[:SEARCH_CHARS]


def rollouts_filtered(
    *, project: Project, filters: RolloutFilters, label_flag: bool = True
) -> QuerySet[Trajectory]:
    """The project's rollouts that ``filters`` select, in its sort. With ``label_flag``
    each row carries ``has_label``; the rollouts page asks ``labelled_ids`` for the rows it
    shows instead, as the flag costs a lookup per row that the query reads."""
    rollouts = Trajectory.objects.filter(project=project)
    if filters.outcome:
        rollouts = rollouts.filter(outcome=filters.outcome)
    if filters.environment:
        rollouts = rollouts.filter(environment=filters.environment)
    if filters.policy_model:
        rollouts = rollouts.filter(policy_model=filters.policy_model)
    if filters.agent_system:
        rollouts = rollouts.filter(agent_system=filters.agent_system)
    if filters.task_id:
        rollouts = rollouts.filter(task_id=filters.task_id)
    if filters.upload:
        rollouts = rollouts.filter(upload_id=filters.upload)
    if filters.q:
        rollouts = rollouts.filter(
            _holds("task_text", filters.q)
            | _holds("external_id", filters.q)
            | _holds("task_id", filters.q)
        )
    # Partial indexes of the step table answer both (ingest.selectors): without them a
    # rare tool made the filter read every step of the project.
    if filters.tool:
        calls = steps_calling(filters.tool).filter(trajectory=OuterRef("pk"))
        rollouts = rollouts.filter(Exists(calls))
    if filters.says:  # the rollout's own steps, through (trajectory, index)
        saying = steps_saying(filters.says).filter(trajectory=OuterRef("pk"))
        rollouts = rollouts.filter(Exists(saying))
    if filters.errors:
        failed_steps = steps_failed()
        if filters.tool:  # with a tool chosen, its own calls failed (or none did)
            failed_steps = failed_steps.filter(tool_name=filters.tool)
        failed = Q(pk__in=failed_steps.values("trajectory_id"))
        rollouts = rollouts.filter(failed if filters.errors == "yes" else ~failed)
    if filters.misbehaviour:
        # A merged one's steps are in the one it joined (a link kept from before a merge).
        held_by = misbehaviours_now(project, [filters.misbehaviour])
        rollouts = _with_misbehaviour(rollouts, held_by[0]) if held_by else rollouts.none()
    if filters.set_size:
        rollouts = _with_set_size(rollouts, filters.set_size)
    has_label = Exists(Label.objects.filter(trajectory=OuterRef("pk")))
    if filters.labelled == "yes":
        rollouts = rollouts.filter(has_label)
    elif filters.labelled == "given":  # a given label is a label: one test is enough
        rollouts = rollouts.filter(own_label_exists())
    elif filters.labelled == "rule":
        rollouts = rollouts.filter(has_label).exclude(own_label_exists())
    elif filters.labelled == "no":
        rollouts = rollouts.exclude(has_label)
    if label_flag:
        rollouts = rollouts.annotate(has_label=has_label)
    return rollouts.order_by(SORTS[filters.sort], "id")


def labelled_ids(ids: list[int]) -> set[int]:
    """Which of these rollouts have a label (the list's "label" badge)."""
    return set(
        Label.objects.filter(trajectory_id__in=ids)
        .order_by()
        .values_list("trajectory_id", flat=True)
        .distinct()
    )


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
    """Distinct environments, models and agent systems, for the filter drop-downs."""
    # A seek per value (ingest.selectors.rollout_distinct_values), not a pass over the project;
    # agent systems are indexed under the outcome, so they are sought per outcome.
    values = partial(rollout_distinct_values, project=project)
    systems = {
        system
        for outcome in Outcome.ALL
        for system in values(column="agent_system", outcome=outcome)
        if system
    }
    return {
        "environments": [e for e in values(column="environment") if e],
        "models": [m for m in values(column="policy_model") if m],
        "systems": sorted(systems),
        # (id, name) for the rollouts filter, largest first.
        "misbehaviours": [(m.pk, str(m)) for m in active_misbehaviours(project)[:300]],
    }


def _holds(field: str, text: str) -> Q:
    """``field`` holds ``text``, any case: ``icontains``, which PostgreSQL's trigram
    indexes answer (ingest migration 0002), or the case-folding match where SQLite's
    would fold ASCII letters only."""
    if needs_folding(text):
        return Q(FoldedHolds(F(field), text))
    return Q(**{f"{field}__icontains": text})
