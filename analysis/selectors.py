"""Reads of the analysis app: what the pages and the project overview show."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, Sum
from django.urls import reverse

from analysis.core.lift import (
    FEW_ROLLOUTS,
    GAP_ALL_SHOW,
    GAP_NO_SUCCESS,
    GAP_NO_SUCCESS_OR_ALL_SHOW,
    GAP_NONE_SHOWS,
    comparable,
    failure_lift,
    few_rollouts,
    length_strata,
    rollout_outcomes,
)
from analysis.core.naming import describe_signal, describe_signals
from analysis.merges import resolve_merged
from analysis.misbehaviour_stats import compared_rollouts
from analysis.models import (
    ClusteringRun,
    Misbehaviour,
    RunKind,
    RunStatus,
    TaxonomyCategory,
    WrongStepMembership,
)
from attribution.core.provenance import argument_origins
from ingest.core.records import Outcome
from ingest.models import Step, Trajectory
from projects.models import Project

MAP_POINTS_MAX = 20_000
PREVIEW_CHARS = 600


def active_misbehaviours(project: Project):
    return (
        Misbehaviour.objects.filter(project=project, is_active=True, merged_into__isnull=True)
        .select_related("category", "suggested_category")
        .order_by("-share", "id")
    )


def project_has_successes(project: Project) -> bool:
    """Whether any rollout of the project succeeded: without one no lift compares."""
    return Trajectory.objects.filter(project=project, outcome=Outcome.SUCCESS).exists()


MSG_FEW_ROLLOUTS = (
    "from fewer than {few} rollouts with an outcome containing it ({count}): one failure "
    "more or less would move it far"
)
# Why a misbehaviour's length-adjusted lift is missing (analysis.core.lift.adjusted_gap).
MSG_ADJUSTED_GAPS = {
    GAP_NO_SUCCESS: "no success among rollouts of the lengths it occurs at",
    GAP_ALL_SHOW: (
        "every rollout of the lengths it occurs at contains it, so none without it is "
        "there to compare with"
    ),
    GAP_NO_SUCCESS_OR_ALL_SHOW: (
        "at each length it occurs at, either no rollout succeeded or every rollout contains it"
    ),
    GAP_NONE_SHOWS: "none of the rollouts compared contains it",
}


MSG_FEW_ADJUSTED = (
    "the length-adjusted lift compares only {count} rollouts containing it, those at "
    "lengths where rollouts with and without it include a success: one failure more or "
    "less would move it far"
)
# Why a misbehaviour has no crude lift while successes exist.
MSG_CRUDE_GAPS = {
    GAP_ALL_SHOW: (
        "every rollout the lift samples contains it by assignment: none without it to compare with"
    ),
    GAP_NONE_SHOWS: (
        "none of the rollouts the lift samples contains it by assignment, every agent "
        "action of each assigned: too rare there to compare"
    ),
}


def lift_rollouts(misbehaviour: Misbehaviour) -> int:
    """The rollouts with an outcome its lifts count as containing it: those of the lift's
    sample assigned to it (failed ones counted by their wrong steps when it was clustered
    before failures were assigned)."""
    failed = len(misbehaviour.failure_rollouts or []) or misbehaviour.rollout_count
    return len(misbehaviour.success_rollouts or []) + failed


def with_lift_marks(misbehaviours: Iterable[Misbehaviour]) -> list[Misbehaviour]:
    """The misbehaviours, each with ``lift_few`` (its lifts come from so few rollouts that
    the pages mark them, by the tools table's rule) and ``lift_few_text``."""
    marked = []
    for misbehaviour in misbehaviours:
        count = lift_rollouts(misbehaviour)
        few = misbehaviour.lift_unadjusted is not None and few_rollouts(count)
        few_text = MSG_FEW_ROLLOUTS.format(few=FEW_ROLLOUTS, count=count) if few else ""
        misbehaviour.lift_few = few  # type: ignore[attr-defined]
        misbehaviour.lift_few_text = few_text  # type: ignore[attr-defined]
        # The adjusted lift rests only on the lengths that hold a success: it may be a
        # few rollouts where the crude one is many (stored since migration 0013).
        compared = misbehaviour.lift_adjusted_rollouts
        adjusted_few = misbehaviour.lift_adjusted is not None and (
            few if compared is None else few_rollouts(compared)
        )
        misbehaviour.lift_adjusted_few = adjusted_few  # type: ignore[attr-defined]
        misbehaviour.lift_adjusted_few_text = (  # type: ignore[attr-defined]
            (few_text if compared is None or few else MSG_FEW_ADJUSTED.format(count=compared))
            if adjusted_few
            else ""
        )
        marked.append(misbehaviour)
    return marked


def crude_lift_gap(misbehaviour: Misbehaviour) -> str:
    """Why a misbehaviour has no crude lift in a project with successes, in words."""
    return MSG_CRUDE_GAPS.get(misbehaviour.lift_gap, MSG_CRUDE_GAPS[GAP_NONE_SHOWS])


def adjusted_lift_gap(project: Project, misbehaviour: Misbehaviour) -> str:
    """Why the misbehaviour has a crude lift but no length-adjusted one, in words ("" when
    it has both, or neither). Read again from the rollouts its lift compared, as the
    refresh compared them (analysis.misbehaviour_stats): only for such a misbehaviour, on
    its own page."""
    if misbehaviour.lift_unadjusted is None or misbehaviour.lift_adjusted is not None:
        return ""
    if misbehaviour.lift_gap:  # stored by the refresh since migration 0013
        return MSG_ADJUSTED_GAPS.get(misbehaviour.lift_gap, "")
    compared = compared_rollouts(project)
    failed, length, group = compared.failed, compared.length, compared.group
    successes, failures = compared.successes, compared.failures
    present = {str(key) for key in misbehaviour.success_rollouts or []}
    by_assignment = bool(misbehaviour.failure_rollouts)
    if by_assignment:
        present |= {str(key) for key in misbehaviour.failure_rollouts}
    else:
        present |= {
            str(pk)
            for pk in WrongStepMembership.objects.filter(misbehaviour=misbehaviour)
            .values_list("step__trajectory_id", flat=True)
            .distinct()
        }
    outcomes = rollout_outcomes(
        failed,
        rollout_length=length,
        rollout_group=group,
        sampled_success=successes.keys(),
        success_scale=successes.scale,
        sampled_failure=failures.keys() if by_assignment else None,
        failure_scale=failures.scale if by_assignment else 1.0,
    )
    if outcomes is None:
        return ""
    estimate = failure_lift(outcomes, present, strata=length_strata(comparable(outcomes)))
    return MSG_ADJUSTED_GAPS.get(estimate.adjusted_gap, "")


MSG_FAILED_LONGER = (
    "In this project failed rollouts are longer than successful ones (median {failed} "
    "steps against {succeeded})"
)
MSG_FAILED_SHORTER = (
    "In this project failed rollouts are shorter than successful ones (median {failed} "
    "steps against {succeeded})"
)
MSG_FAILED_AS_LONG = (
    "In this project failed and successful rollouts are as long as each other (median "
    "{failed} steps)"
)


def _median_length(project: Project, outcome: str) -> float | None:
    """The median step count of the project's rollouts of ``outcome`` (None: none), read
    as one or two rows at the middle of the order rather than every count."""
    rows = Trajectory.objects.filter(project=project, outcome=outcome)
    count = rows.count()
    if not count:
        return None
    ordered = rows.order_by("step_count", "id").values_list("step_count", flat=True)
    middle = list(ordered[(count - 1) // 2 : count // 2 + 1])
    return sum(middle) / len(middle)


def rollout_length_contrast(project: Project) -> dict[str, Any]:
    """Whether the project's failed rollouts are longer than its successful ones (their
    median lengths): ``relation`` "longer", "shorter", "as long" or "" (no failure or no
    success), ``sentence`` what is true in words ("" then), and ``comes_with`` the
    rollouts a behaviour that merely comes with length rides on ("long", "short", or
    "long or short"). The pages' copy on the length-adjusted lift follows it."""
    failed = _median_length(project, Outcome.FAILURE)
    succeeded = _median_length(project, Outcome.SUCCESS)
    if failed is None or succeeded is None:
        return {"relation": "", "sentence": "", "comes_with": "long or short"}
    numbers = {"failed": f"{failed:g}", "succeeded": f"{succeeded:g}"}
    if failed > succeeded:
        relation, sentence, comes_with = "longer", MSG_FAILED_LONGER, "long"
    elif failed < succeeded:
        relation, sentence, comes_with = "shorter", MSG_FAILED_SHORTER, "short"
    else:
        relation, sentence, comes_with = "as long", MSG_FAILED_AS_LONG, "long or short"
    return {
        "relation": relation,
        "sentence": sentence.format(**numbers),
        "comes_with": comes_with,
        "failed_median": failed,
        "success_median": succeeded,
    }


def misbehaviour_exists(*, project: Project, pk: int) -> bool:
    """Whether the project has this misbehaviour (a merged one too: it stands for the one
    it was merged into)."""
    return Misbehaviour.objects.filter(project=project, pk=pk).exists()


def misbehaviours_now(project: Project, ids: Iterable[int]) -> list[int]:
    """The misbehaviours of the project that now hold the steps of these: a merged one's
    steps went to the one it was merged into (its merges followed), so a filter or an
    export asking for it means that one. Ids of no misbehaviour of the project are left
    out; the order is kept, without repeats.

    Example: with 16 merged into 12, ``misbehaviours_now(project, [16, 3])`` is ``[12, 3]``.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    by_pk = {m.pk: m for m in Misbehaviour.objects.filter(project=project).only("merged_into")}
    finals = [resolve_merged(by_pk.get(pk), by_pk) for pk in wanted]
    return list(dict.fromkeys(m.pk for m in finals if m is not None))


def signal_rows(misbehaviour: Misbehaviour) -> list[tuple[str, float]]:
    """Its behaviour signals in words with the share of its steps showing each, largest first."""
    signals = misbehaviour.signals if isinstance(misbehaviour.signals, dict) else {}
    rows = [(describe_signal(str(name)), float(share)) for name, share in signals.items()]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def rollout_wrong_steps(rollout_id: int) -> list[dict[str, Any]]:
    """The rollout's wrong steps as the last clustering saw them, the likeliest decisive
    error first (by weight, then in step order): the misbehaviour each belongs to (None:
    unclustered), why it counts as wrong and its behaviour signals in words. What links
    the rollout page's "where" to the "why"."""
    memberships = (
        WrongStepMembership.objects.filter(step__trajectory_id=rollout_id)
        .select_related("misbehaviour", "step")
        .only(
            "step__index", "source", "weight", "signals",
            "misbehaviour__name", "misbehaviour__user_name", "misbehaviour__key",
            "misbehaviour__is_active",
        )
        # A long rollout's set holds many steps at a percent or two; the one at 60% leads.
        .order_by("-weight", "step__index")
    )  # fmt: skip
    rows: list[dict[str, Any]] = []
    for membership in memberships:
        misbehaviour = membership.misbehaviour
        rows.append(
            {
                "index": membership.step.index,
                "source": membership.source,
                # The step's weight as a wrong step: its probability of being the decisive
                # error (``probability`` is the clustering's membership strength).
                "weight": membership.weight,
                "signals": describe_signals([str(name) for name in membership.signals or []]),
                "misbehaviour": misbehaviour if misbehaviour and misbehaviour.is_active else None,
            }
        )
    return rows


def category_suggestions(project: Project) -> list[Misbehaviour]:
    """Active misbehaviours with a suggested MAST mode and no category yet, largest first."""
    return list(
        active_misbehaviours(project).filter(
            category__isnull=True, suggested_category__isnull=False
        )
    )


def misbehaviour_summary(project: Project) -> list[dict[str, Any]]:
    """What the overview's treemap needs: one row per misbehaviour, largest share first.

    Rows: ``id``, ``name``, ``category`` (name or ""), ``category_group``, ``share`` (of all
    wrong steps, 0-1), ``steps`` (count), ``generalises``, ``url`` (the misbehaviour page).
    A misbehaviour the user has not categorised sits under its suggested mode when the
    suggestion is strong, named "… (suggested)"; a weak one leaves it uncategorised.
    """
    rows = []
    for m in active_misbehaviours(project):
        category = m.category
        suffix = ""
        if category is None and m.suggestion_is_strong:
            category, suffix = m.suggested_category, " (suggested)"
        rows.append(
            {
                "id": m.pk,
                "name": m.display_name,
                "category": f"{category.name}{suffix}" if category else "",
                "category_group": category.group if category else "",
                "share": m.share,
                "steps": m.size,
                "generalises": m.generalises,
                "url": reverse("analysis:misbehaviour_detail", args=[project.slug, m.pk]),
            }
        )
    return rows


def unclustered_summary(project: Project) -> dict[str, Any]:
    noise = Q(misbehaviour__isnull=True)
    totals = WrongStepMembership.objects.filter(project=project).aggregate(
        wrong_steps=Count("id"),
        count=Count("id", filter=noise),
        total_weight=Sum("weight"),
        noise_weight=Sum("weight", filter=noise),
    )
    total = totals["total_weight"] or 0.0
    return {
        "wrong_steps": totals["wrong_steps"],
        "count": totals["count"],
        "share": ((totals["noise_weight"] or 0.0) / total) if total else 0.0,
    }


def latest_run(project: Project) -> ClusteringRun | None:
    return ClusteringRun.objects.filter(project=project).order_by("-created_at", "-id").first()


def last_full_run(project: Project) -> ClusteringRun | None:
    return (
        ClusteringRun.objects.filter(project=project, kind=RunKind.FULL, status=RunStatus.DONE)
        .order_by("-finished_at", "-id")
        .first()
    )


def run_status(run: ClusteringRun | None) -> dict[str, Any]:
    if run is None:
        return {"status": "none"}
    return {
        "id": run.pk,
        "status": run.status,
        "kind": run.kind,
        "stage": run.stage,
        "percent": run.progress_percent,
        "error": run.error_message,
    }


def misbehaviour_for_project(project: Project, pk: int) -> Misbehaviour:
    misbehaviour = Misbehaviour.objects.select_related(
        "category", "suggested_category", "merged_into"
    ).get(project=project, pk=pk)
    misbehaviour.project = project  # the caller has it: no query per later .project read
    return misbehaviour


def step_url(slug: str, trajectory_id: int, index: int) -> str:
    return reverse("dashboard:rollout_detail", args=[slug, trajectory_id]) + f"#step-{index}"


def exemplar_steps(misbehaviour: Misbehaviour) -> list[dict[str, Any]]:
    """The exemplar steps, strongest first, with what the page shows of each."""
    ids = [int(pk) for pk in misbehaviour.exemplars]
    steps = Step.objects.filter(pk__in=ids, trajectory__project_id=misbehaviour.project_id)
    by_id = {s.pk: s for s in steps.select_related("trajectory")}
    memberships = {
        step_id: (probability, sources)
        for step_id, probability, sources in WrongStepMembership.objects.filter(
            step_id__in=ids
        ).values_list("step_id", "probability", "arg_sources")
    }
    slug = misbehaviour.project.slug
    rows = []
    for pk in ids:
        step = by_id.get(pk)
        if step is None:
            continue
        content = " ".join((step.content or "").split())
        rows.append(
            {
                "step": step,
                "rollout": step.trajectory,
                "preview": content[:PREVIEW_CHARS] + ("…" if len(content) > PREVIEW_CHARS else ""),
                "probability": memberships.get(pk, (None, []))[0],
                "arg_sources": argument_origins(memberships.get(pk, (None, []))[1]),
                "url": step_url(slug, step.trajectory_id, step.index),
            }
        )
    return rows


def map_points(project: Project, *, limit: int = MAP_POINTS_MAX) -> list[dict[str, Any]]:
    """Wrong steps with their 2-D coordinates, every n-th one beyond ``limit``."""
    rows = WrongStepMembership.objects.filter(project=project).order_by("id")
    total = rows.count()
    values = rows.values_list(
        "x",
        "y",
        "misbehaviour_id",
        "step__trajectory_id",
        "step__index",
        "step__tool_name",
        "step__agent",
    )
    stride = max(1, -(-total // limit))
    names = {m.pk: m.display_name for m in Misbehaviour.objects.filter(project=project)}
    points = []
    for position, (x, y, misbehaviour_id, trajectory_id, index, tool, agent) in enumerate(
        values.iterator(chunk_size=5000)
    ):
        if position % stride:
            continue
        group = names.get(misbehaviour_id) if misbehaviour_id else None
        points.append(
            {
                "x": x,
                "y": y,
                "group": group,
                "url": step_url(project.slug, trajectory_id, index),
                "label": f"{group or 'unclustered'} · rollout {trajectory_id} step {index}"
                + (f" · {tool}" if tool else f" · {agent}" if agent else ""),
            }
        )
    return points


def merge_targets(misbehaviour: Misbehaviour) -> list[Misbehaviour]:
    return [m for m in active_misbehaviours(misbehaviour.project) if m.pk != misbehaviour.pk]


def categories_for_project(project: Project) -> list[TaxonomyCategory]:
    """MAST's built-in modes first, then the project's own categories."""
    return list(
        TaxonomyCategory.objects.filter(Q(project__isnull=True) | Q(project=project)).order_by(
            "project_id", "position", "name"
        )
    )


def taxonomy_rows(project: Project) -> list[dict[str, Any]]:
    """Categories grouped (MAST groups, then "Custom"), each with its mapped misbehaviours."""
    mapped: dict[int, list[Misbehaviour]] = {}
    for m in active_misbehaviours(project).filter(category__isnull=False):
        if m.category_id is not None:
            mapped.setdefault(m.category_id, []).append(m)
    groups: dict[str, list[dict[str, Any]]] = {}
    for category in categories_for_project(project):
        members = mapped.get(category.pk, [])
        groups.setdefault(category.group or "Custom", []).append(
            {
                "category": category,
                "misbehaviours": members,
                "share": sum(m.share for m in members),
            }
        )
    return [{"group": name, "categories": rows} for name, rows in groups.items()]
