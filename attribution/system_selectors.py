"""Reads of the per-agent-system attribution: the labelling queue, each system's progress
toward a calibrated state, and its calibration (labels used, coverage, removal)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q
from django.urls import reverse

from attribution.core.conformal import POOLED, length_buckets, mass_beyond
from attribution.core.coverage_monitor import monitor
from attribution.core.diagnostics import curve_at
from attribution.core.label_sources import may_calibrate
from attribution.core.scorers import HeuristicScorer, LearnedScorer
from attribution.core.scorers.judge import LLMJudgeScorer
from attribution.core.scorers.per_system import PerSystemScorer
from attribution.core.system_calibration import (
    SystemCalibration,
    labels_needed,
    min_labels_for,
    system_key,
)
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.services import (
    MIN_HELD_OUT_LABELS,
    MIN_TRAINING_LABELS,
    learned_scorer_labels_needed,
)
from ingest.core.records import LabelSource, Outcome
from ingest.models import Label, Trajectory
from ingest.selectors import rollout_distinct_values, usable_labels
from projects.models import Project

QUEUE_PAGE_SIZE = 100
QUEUE_RULE = (
    "Agent systems short of labels come first, one at a time, the one whose missing labels "
    "unlock the most rollouts per label first: until a system has enough labels none of its "
    "rollouts gets a confidence claim. Within that deficit the order is a stable random one, "
    "not the scorer's doubt: these labels set the threshold, and conformal coverage holds "
    "only when they are a representative sample of the rollouts it is applied to (and "
    "rollouts whose label would train the scorer instead wait until the deficit is filled). After "
    "that, rollouts whose label trains the scorer come least-sure first (highest entropy "
    "of the step probabilities), alternating with rollouts whose label refines the "
    "calibration, again in random order. Last come systems with fewer failed rollouts to "
    "label than the labels they need: labelling all of them still brings no claim, so "
    "their labels wait until more of their rollouts arrive, or until the calibration page "
    "lets them borrow another system's calibration."
)
QUEUE_REASONS = {
    "deficit": "its system needs labels before any claim",
    "uncertain": "the scorer is least sure (trains the scorer)",
    "calibration": "random sample (refines the calibration)",
    "short": "its system has fewer failed rollouts to label than the labels it needs",
}
RULE_HUMAN = "hand labels (human or shipped with a data set)"
RULE_GOLD = (
    "gold-action labels: the earliest tool call that departs from the task's gold actions "
    "in a way that can change the outcome (a wrong or missing state-changing call)"
)
MSG_POINT_OUTSIDE = (
    "The most probable single step, step {point} ({percent}%), lies {side} the set: "
    "{beyond}% of the scorer's weight lies {direction} it, and the set is the run of steps "
    "that holds the decisive step with the promised confidence. If step {point} is the "
    "error, restart from the state before it."
)
MSG_BORROWED = "Calibrated on {lender}'s labels: this project lets {system} borrow them."
MSG_BORROWED_POOLED = (
    "Calibrated on every system's labels pooled: this project lets {system} borrow them."
)
MSG_GOLD_RULE = (
    "Calibrated on gold-action labels, not hand labels: the confidence refers to that "
    "labelling rule (the earliest deviation from the task's gold actions that can flip the "
    "outcome)."
)


def labelling_rule(project: Project) -> str:
    """Which labelling rule the project's guarantee refers to."""
    if project.gold_actions_calibrate:
        return f"{RULE_HUMAN}, and {RULE_GOLD}"
    return RULE_HUMAN


def queue_url(project: Project) -> str:
    return reverse("attribution:labelling_queue", kwargs={"slug": project.slug})


def next_in_queue(trajectory: Trajectory, rank: int | None) -> int | None:
    """The id of the next rollout to label after this one (the first when it is not queued)."""
    rows = TrajectoryAttribution.objects.filter(
        project_id=trajectory.project_id, queue_rank__isnull=False
    ).exclude(trajectory_id=trajectory.pk)
    if rank is not None:
        later = rows.filter(queue_rank__gt=rank).order_by("queue_rank")
        found = later.values_list("trajectory_id", flat=True).first()
        if found is not None:
            return found
    return rows.order_by("queue_rank").values_list("trajectory_id", flat=True).first()


def claim_notes(row: TrajectoryAttribution) -> list[str]:
    """What the rollout page says about where a claim's calibration comes from."""
    if not row.claim:
        return []
    system = row.trajectory.agent_system or "this system"
    notes = []
    if row.calibration_source == "borrowed":
        if row.calibration_system == POOLED:
            notes.append(MSG_BORROWED_POOLED.format(system=system))
        else:
            notes.append(MSG_BORROWED.format(lender=row.calibration_system, system=system))
    calibration = row.calibration
    if calibration is not None:
        if row.calibration_system == POOLED:
            sources = list(calibration.label_sources)
        else:
            systems = calibration.diagnostics.get("systems", {})
            sources = list(systems.get(row.calibration_system, {}).get("sources", {}))
        if LabelSource.GOLD_ACTIONS in sources:
            notes.append(MSG_GOLD_RULE)
    outside = _point_outside(row)
    if outside:
        notes.append(outside)
    return notes


def _point_outside(row: TrajectoryAttribution) -> str:
    """The note for a set that leaves out the most probable step ("" when it holds it)."""
    if row.lo is None or row.hi is None or not row.probabilities:
        return ""
    beyond = mass_beyond(row.probabilities, row.lo, row.hi, row.point_step)
    if beyond is None:
        return ""
    before = row.point_step < row.lo
    return MSG_POINT_OUTSIDE.format(
        point=row.point_step,
        percent=round(100 * row.probabilities[row.point_step] / sum(row.probabilities)),
        side="before" if before else "after",
        beyond=round(100 * beyond),
        direction="after" if before else "before",
    )


def calibration_basis(row: TrajectoryAttribution) -> dict[str, Any] | None:
    """Which labels set a claimed rollout's tau: the calibrating system (its own, a lender
    or every label pooled), how many labels it had, and whether the rollout's length bucket
    had its own tau or the system's pooled one (with the bucket's labels and the need)."""
    calibration = row.calibration
    if not row.claim or calibration is None:
        return None
    stored = calibration.by_system or {}
    if row.calibration_system == POOLED:
        used = stored.get("pooled") or {}
        system = "every agent system pooled"
    else:
        used = stored.get("by_system", {}).get(row.calibration_system, {})
        system = row.calibration_system
    return {
        "system": system,
        "m": int(used.get("m", calibration.m)),
        "group": row.group,
        "own_group": row.calibration_group == row.group,
        "group_m": int(used.get("m_by_group", {}).get(row.group, 0)),
        "min_group_size": int(used.get("min_group_size", calibration.min_group_size)),
    }


SCORER_NAMES = {
    HeuristicScorer.kind: "the label-free heuristic",
    LLMJudgeScorer.kind: "the LLM judge",
    LearnedScorer.kind: "the learned scorer",
}
MSG_OWN_SCORER = "its own learned scorer ({count} labels)"


def ranked_by(scorer: TrainedScorer | None, system: str) -> str:
    """Which scorer ranks ``system``'s steps, in words: a system's own learned scorer (with
    how many of its labels trained it), else the fallback every other system gets."""
    if scorer is None:
        return ""
    kind = scorer.kind
    if kind == PerSystemScorer.kind:
        trained = (scorer.metrics or {}).get("systems_trained", {})
        if system in trained:
            return MSG_OWN_SCORER.format(count=trained[system])
        # PerSystemScorer.get_params names its fallback's kind.
        kind = (scorer.params or {}).get("fallback", {}).get("kind", "")
    return SCORER_NAMES.get(kind, kind)


def rollout_ranked_by(row: TrajectoryAttribution) -> str:
    """Which scorer ranked this attribution's steps, in words ("" when it is not stored)."""
    scorer = (
        TrainedScorer.objects.filter(project_id=row.project_id, version=row.scorer_version)
        .only("kind", "params", "metrics")
        .first()
    )
    return ranked_by(scorer, system_key(row.trajectory.agent_system))


# Which scorer ranks a system's steps is apart from whether its sets are calibrated (far
# fewer labels calibrate than train a scorer): each note says it is about the ranking, so
# beside "calibrated at 90%" it never reads as a verdict on the calibration ("Out of reach
# for now: ... fewer than the 40 labelled" did).
MSG_LEARNED_NEEDS = (
    "Steps ranked by {fallback} until {target} labelled failed rollouts give it a learned "
    "scorer of its own: {needed} to go ({labelled} of {target})."
)
MSG_LEARNED_OUT_OF_REACH = (
    "Steps ranked by {fallback}: a learned scorer of its own needs {target} labelled failed "
    "rollouts and it has only {rollouts} failed rollout{plural}, so labelling every one "
    "leaves the ranking as it is. Upload more of its rollouts for one."
)
MSG_LEARNED_NEXT_REFRESH = (
    "Steps ranked by {fallback} until the next full refresh: it has the {target} labels a "
    "learned scorer of its own needs, and the refresh trains it when at least {held_out} of "
    "them fall in the half of its tasks that calibrates."
)


def _has_own_scorer(scorer: TrainedScorer | None, system: str) -> bool:
    """Whether ``scorer`` gives ``system`` a learned scorer trained on its labels."""
    if scorer is None:
        return False
    if scorer.kind == PerSystemScorer.kind:
        return system in (scorer.metrics or {}).get("systems_trained", {})
    return scorer.kind == LearnedScorer.kind


def learned_scorer_note(
    *, scorer: TrainedScorer | None, system: str, labelled: int, rollouts: int
) -> str:
    """When ``system``'s own learned scorer takes over from the label-free ranking, in
    words ("" when it ranks its steps already): how many more labelled failed rollouts
    it needs, or that its ``rollouts`` failed rollouts are too few for it whatever is
    labelled (attribution.services.learned_scorer_labels_needed is the rule)."""
    if _has_own_scorer(scorer, system):
        return ""
    fallback = ranked_by(scorer, system) or SCORER_NAMES[HeuristicScorer.kind]
    needed = learned_scorer_labels_needed(labelled)
    if not needed:
        return MSG_LEARNED_NEXT_REFRESH.format(
            fallback=fallback, target=MIN_TRAINING_LABELS, held_out=MIN_HELD_OUT_LABELS
        )
    if rollouts < MIN_TRAINING_LABELS:
        return MSG_LEARNED_OUT_OF_REACH.format(
            rollouts=rollouts,
            plural="" if rollouts == 1 else "s",
            target=MIN_TRAINING_LABELS,
            fallback=fallback,
        )
    return MSG_LEARNED_NEEDS.format(
        needed=needed,
        labelled=labelled,
        target=MIN_TRAINING_LABELS,
        fallback=fallback,
    )


def _labelled_by_system(project: Project) -> tuple[dict[str, int], dict[str, int]]:
    """Labelled failed rollouts (with steps) per agent system, in one read of the labels:
    whatever the label's source (what a full refresh counts to train a system's own
    scorer), and with a label of a source that may calibrate
    (``label_sources.may_calibrate``)."""
    labels = usable_labels(
        Label.objects.filter(
            trajectory__project=project,
            trajectory__outcome=Outcome.FAILURE,
            trajectory__step_count__gt=0,
        )
    )
    gold = project.gold_actions_calibrate
    sources = [s for s in LabelSource.ALL if may_calibrate(s, gold_actions_calibrate=gold)]
    rows = (
        labels.values("trajectory__agent_system")
        .annotate(
            rollouts=Count("trajectory", distinct=True),
            calibrating=Count("trajectory", distinct=True, filter=Q(source__in=sources)),
        )
        .order_by()
    )
    rollouts: dict[str, int] = {}
    calibrating: dict[str, int] = {}
    for row in rows:  # one row per stored system name; system_key merges the unnamed
        system = system_key(row["trajectory__agent_system"])
        rollouts[system] = rollouts.get(system, 0) + row["rollouts"]
        calibrating[system] = calibrating.get(system, 0) + row["calibrating"]
    return rollouts, calibrating


def _current_scorer(project: Project) -> TrainedScorer | None:
    """The scorer of the project's attributions: every row a refresh writes carries the
    scorer of the last full refresh, so any one row names it (the first by key: an index
    seek, where the newest by time would sort all of the project's rows)."""
    version = (
        TrajectoryAttribution.objects.filter(project=project)
        .order_by("pk")
        .values_list("scorer_version", flat=True)
        .first()
    )
    if not version:
        return None
    return TrainedScorer.objects.filter(project=project, version=version).first()


def system_progress(project: Project) -> list[dict[str, Any]]:
    """Per agent system with failed rollouts: labels needed, claims, queued, progress,
    which scorer ranks its steps and when its own learned scorer takes over."""
    target = min_labels_for(project.miscoverage)
    scorer = _current_scorer(project)
    calibration = Calibration.objects.filter(project=project).first()
    counted = (calibration.by_system or {}).get("labels_by_system", {}) if calibration else {}
    # Counted now, so that the progress never goes back while labels arrive during a
    # refresh (whose rows still carry the labels it counted when it started).
    labelled, calibrating = _labelled_by_system(project)
    rows = (
        TrajectoryAttribution.objects.filter(project=project)
        .values("trajectory__agent_system")
        .annotate(
            rollouts=Count("id"),
            claims=Count("id", filter=Q(claim=True)),
            queued=Count("id", filter=Q(queue_rank__isnull=False)),
            needed=Max("labels_needed"),
        )
        .order_by("trajectory__agent_system")
    )
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        system = system_key(row["trajectory__agent_system"])
        entry = found.setdefault(
            system, {"system": system, "rollouts": 0, "claims": 0, "queued": 0, "needed": 0}
        )
        entry["rollouts"] += row["rollouts"]
        entry["claims"] += row["claims"]
        entry["queued"] += row["queued"]
        entry["needed"] = max(entry["needed"], row["needed"] or 0)
    progress = []
    for system, entry in sorted(found.items()):
        # A label given since the refresh lowered "needed" already (take_labelled_out).
        labels = max(
            int(counted.get(system, 0)), target - entry["needed"], calibrating.get(system, 0)
        )
        entry.update(
            labels=labels,
            target=target,
            calibrated=entry["needed"] == 0 and entry["claims"] > 0,
            # Labelling every queued rollout of it still leaves it short of a claim.
            short_by=max(0, entry["needed"] - entry["queued"]) if entry["claims"] == 0 else 0,
            percent=min(100, round(100 * labels / target)) if target else 100,
            level=round(100 * (1 - project.miscoverage)),
            ranked_by=ranked_by(scorer, system),
            learned_note=learned_scorer_note(
                scorer=scorer,
                system=system,
                labelled=labelled.get(system, 0),
                rollouts=entry["rollouts"],
            ),
        )
        progress.append(entry)
    return sorted(progress, key=lambda p: (-p["needed"], p["system"]))


def labelling_queue_page(project: Project, *, limit: int = QUEUE_PAGE_SIZE) -> dict[str, Any]:
    """The labelling-queue page: the first rollouts in queue order, and the progress."""
    queued = TrajectoryAttribution.objects.filter(project=project, queue_rank__isnull=False)
    rows = queued.select_related("trajectory").order_by("queue_rank")[:limit]
    entries = [
        {
            "rank": row.queue_rank + 1 if row.queue_rank is not None else None,
            "trajectory": row.trajectory,
            "system": system_key(row.trajectory.agent_system),
            "reason": QUEUE_REASONS.get(row.queue_reason, row.queue_reason),
            "point_step": row.point_step,
            "steps": len(row.probabilities),
        }
        for row in rows
    ]
    return {
        "entries": entries,
        "queued": queued.count(),
        "progress": system_progress(project),
        "rule": QUEUE_RULE,
        "labelling_rule": labelling_rule(project),
    }


# What a measured held-out coverage says against its promise (``held_out_verdict``).
BELOW_PROMISE = "below"
TOO_FEW_TO_JUDGE = "too_few"


def held_out_verdict(coverage: float | None, labels: int, promised: float) -> dict[str, Any]:
    """Whether a held-out coverage measured on ``labels`` labels is below ``promised`` by
    more than binomial noise would explain, by the coverage monitor's own rule (its
    one-sided binomial test and threshold, attribution.core.coverage_monitor): ``verdict``
    is BELOW_PROMISE, TOO_FEW_TO_JUDGE (even none of them covered would be within noise,
    so no figure could be marked) or "" (within noise, or nothing measured), with the
    test's ``p_value``.

    >>> [held_out_verdict(c, n, 0.9)["verdict"] for c, n in ((0.75, 40), (0.811, 37), (0.0, 1))]
    ['below', '', 'too_few']
    """
    if coverage is None or labels <= 0:
        return {"verdict": "", "p_value": None}
    alpha = 1 - promised
    if not monitor("", [(False, alpha)] * labels).warns:
        return {"verdict": TOO_FEW_TO_JUDGE, "p_value": None}
    covered = round(coverage * labels)
    checked = monitor("", [(True, alpha)] * covered + [(False, alpha)] * (labels - covered))
    return {"verdict": BELOW_PROMISE if checked.warns else "", "p_value": checked.p_value}


def system_calibration_rows(calibration: Calibration | None) -> list[dict[str, Any]]:
    """Per agent system (and environment): labels used, their sources, promised and
    measured held-out coverage, and the removal, at the calibration's alpha."""
    if calibration is None:
        return []
    by_system = calibration.by_system or {}
    calibrated = set(by_system.get("by_system", {}))
    borrow = by_system.get("borrow", {})
    rows = []
    for system, data in sorted(calibration.diagnostics.get("systems", {}).items()):
        curve = data.get("curve", [])
        at = curve_at(curve, calibration.alpha)
        promised = 1 - calibration.alpha
        environments = []
        for environment, count in sorted(data.get("environments", {}).items()):
            measured = (at or {}).get("by_group", {}).get(environment, {}).get("coverage")
            environments.append(
                {
                    "environment": environment,
                    "labels": count,
                    "coverage": measured,
                    **held_out_verdict(measured, count, promised),
                }
            )
        coverage = at["coverage"] if at else None
        rows.append(
            {
                **held_out_verdict(coverage, data.get("labels", 0), promised),
                "system": system,
                "labels": data.get("labels", 0),
                "sources": sorted(data.get("sources", {}).items()),
                "calibrated": system in calibrated,
                "borrows": borrow.get(system, ""),
                "promised": promised,
                "coverage": coverage,
                "removal": at["removal"] if at else None,
                "environments": environments if len(environments) > 1 else [],
            }
        )
    return rows


def system_thresholds(calibration: Calibration, systems: list[str]) -> list[dict[str, Any]]:
    """Per agent system (every one in ``systems`` and every one with calibrating labels):
    whose thresholds its rollouts' sets use, those thresholds, the labels still needed and
    the held-out coverage and removal at the calibration's alpha."""
    per_system = SystemCalibration.from_dict(calibration.by_system)
    diagnostics = calibration.diagnostics.get("systems", {})
    needed = per_system.deficits()
    rows = []
    for system in sorted(set(systems) | set(per_system.labels_by_system)):
        own = per_system.by_system.get(system)
        lender = per_system.borrow.get(system, "")
        used = own or (per_system.by_system.get(lender) if lender else None)
        if own is None and lender == POOLED:
            used = per_system.pooled
        at = curve_at(diagnostics.get(system, {}).get("curve", []), calibration.alpha)
        rows.append(
            {
                "system": system,
                "labels": per_system.labels_by_system.get(system, 0),
                "calibration": "own" if own else ("borrowed" if used else "none"),
                "borrows_from": lender if own is None and used else "",
                "labels_needed": needed.get(
                    system, labels_needed(0, calibration.alpha, per_system.min_labels)
                ),
                "pooled_tau": own.pooled_tau if own else None,
                "tau_by_group": dict(own.tau_by_group) if own else {},
                "m_by_group": dict(own.m_by_group) if own else {},
                "held_out_coverage": at["coverage"] if at else None,
                "held_out_removal": at["removal"] if at else None,
            }
        )
    return rows


def system_groups(calibration: Calibration) -> list[dict[str, Any]]:
    """Per agent system that calibrates on its own labels, its length buckets: labels (m),
    the tau its rollouts of that length get (the bucket's own, or the system's pooled one
    when the bucket has too few labels) and the held-out coverage in that bucket."""
    by_system = (calibration.by_system or {}).get("by_system", {})
    diagnostics = calibration.diagnostics.get("systems", {})
    rows = []
    for system, data in sorted(by_system.items()):
        at = curve_at(diagnostics.get(system, {}).get("length_curve", []), calibration.alpha)
        measured = (at or {}).get("by_group", {})
        own = data.get("tau_by_group", {})
        for group, m in sorted(
            data.get("m_by_group", {}).items(), key=lambda kv: _bucket_order(kv[0])
        ):
            rows.append(
                {
                    "system": system,
                    "group": group,
                    "m": m,
                    "tau": own.get(group, data["pooled_tau"]),
                    "own_tau": group in own,
                    "coverage": measured.get(group, {}).get("coverage"),
                    "tested": measured.get(group, {}).get("tested", 0),
                }
            )
    return rows


def _bucket_order(group: str) -> int:
    """Length buckets in length order ("1-8" before "9-16" before "65+")."""
    order = length_buckets()
    return order.index(group) if group in order else len(order)


def project_systems(project: Project) -> list[str]:
    """The agent systems of the project's failed rollouts, keyed as calibration keys them."""
    # A seek per system on (project, outcome, agent_system), not a pass over every failure.
    systems = rollout_distinct_values(project=project, column="agent_system", outcome="failure")
    return sorted({system_key(s) for s in systems})
