"""Reads of the attribution app: the rollout panel, coverage monitoring, calibration page."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from attribution import charts
from attribution.core.coverage_monitor import WARNING_P_VALUE, monitor, monitor_by_system
from attribution.core.diagnostics import systems_held_out
from attribution.core.labelling_queue import REASON_SHORT
from attribution.core.metrics import covers, set_size
from attribution.core.system_calibration import SystemCalibration, system_key
from attribution.labels import blames_another_agent, may_remove
from attribution.models import Calibration, CoverageCheck, TrajectoryAttribution
from attribution.system_selectors import (
    calibration_basis,
    claim_notes,
    labelling_rule,
    next_in_queue,
    project_systems,
    queue_url,
    rollout_ranked_by,
    system_calibration_rows,
    system_groups,
    system_progress,
)
from ingest.core.records import LabelSource, Outcome
from ingest.core.vocabulary import acting_agent, base_agent
from ingest.models import Label, Step, Trajectory
from projects.access import membership_of
from projects.models import Project

# A warning shows when a system's measured coverage is this unlikely under its promise
# (the coverage monitor's threshold: the calibration page marks held-out rows by it too).
MSG_COVERAGE_LOW = (
    "{system}: measured coverage {measured:.0%} on {checked} labels is below the promised "
    "{promised:.0%} beyond binomial noise (p = {p_value:.3f}): its rollouts may have "
    "changed since calibration."
)
MSG_NO_CLAIM = (
    "No confidence claim: agent system {system} needs {needed} more labelled failed "
    "rollout{plural} for {confidence:.0%} confidence. The scorer ranks step {point} first{agent}."
)
RANKING_SHOWN = 5
LABEL_SOURCE_NAMES = {
    LabelSource.HUMAN: "human",
    LabelSource.DATASET: "dataset",
    LabelSource.GOLD_ACTIONS: "gold-action rule",
    LabelSource.SIBLING_DIVERGENCE: "sibling divergence (trains only)",
}
MSG_SHORT = (
    "Labelling every one of {system}'s failed rollouts still makes no claim: only {queued} "
    "{are} without a label and it needs {needed}. Upload more of its rollouts, or let it "
    "borrow another system's calibration on the calibration page."
)
MSG_NOT_CALIBRATED = (
    "Not calibrated yet: label the decisive step of more failed rollouts "
    "(at least {needed} for {confidence:.0%} confidence)."
)


def label_author(label: Label) -> str:
    """Who gave a label, as the panel names it: a person, or the API token that wrote it."""
    if label.author is not None:
        return label.author.get_username()
    return f"API token “{label.token.name}”" if label.token is not None else ""


def _confidence(alpha: float | None) -> float | None:
    return None if alpha is None else 1 - alpha


# A set this large a share of the rollout barely narrows the search; the sentence says so.
WIDE_SET_SHARE = 0.8
MSG_WIDE_SET = (
    " That is {size} of its {steps} steps: too wide to narrow the search much yet; "
    "more labels of this agent system sharpen the sets."
)


def _steps_text(lo: int, hi: int) -> str:
    return f"step {lo}" if lo == hi else f"steps {lo}-{hi}"


def step_agents(trajectory_id: int, indices: Collection[int]) -> dict[int, str]:
    """Who took each of these steps of a rollout (:func:`ingest.core.vocabulary.acting_agent`:
    the agent's base name, else its role), in one query; a step that is gone is left out."""
    steps = Step.objects.filter(trajectory_id=trajectory_id, index__in=set(indices))
    return {step.index: acting_agent(step) for step in steps.only("index", "agent", "role")}


def point_step_agent(row: TrajectoryAttribution) -> str | None:
    """Who took the most probable step; None if it is gone."""
    return step_agents(row.trajectory_id, [row.point_step]).get(row.point_step)


def _point_agent_text(row: TrajectoryAttribution, point_agent: str | None) -> str:
    """After "step N": whose step it is and, when another agent's steps together hold more
    probability, that agent ("ranks step 2 first (most probability on the steps of
    sql_runner)" read as if step 2 were sql_runner's; it was the planner's)."""
    if point_agent is None:
        return f" (most probability on the steps of {row.agent})" if row.agent else ""
    if not point_agent or base_agent(point_agent) == base_agent(row.agent or point_agent):
        return f" ({point_agent}’s)" if point_agent else ""
    return f" ({point_agent}’s; the steps of {row.agent} together hold the most probability)"


def attribution_sentence(
    row: TrajectoryAttribution,
    *,
    miscoverage: float | None = None,
    point_agent: str | None = None,
) -> str:
    """The one sentence the rollout page shows, e.g. "With 90% confidence ... steps 12-15".

    Without a claim because the rollout's agent system has too few labels, it says how many
    more that system needs (at ``miscoverage``, the project's alpha). ``point_agent``
    (:func:`point_step_agent`) names who took the most probable step where one is named."""
    # The agent is the one whose steps hold the most probability together, which need not
    # be the agent of the most probable step: said so, not "agent X most likely" beside a
    # step another agent took.
    agent = f" (most probability on the steps of {row.agent})" if row.agent else ""
    point = _point_agent_text(row, point_agent)
    if not row.is_calibrated and row.labels_needed and miscoverage is not None:
        return MSG_NO_CLAIM.format(
            system=row.trajectory.agent_system or "(unknown system)",
            needed=row.labels_needed,
            plural="" if row.labels_needed == 1 else "s",
            confidence=1 - miscoverage,
            point=row.point_step,
            agent=point,
        )
    if not row.is_calibrated or row.alpha is None:
        return (
            f"Not calibrated yet; the most probable decisive step is step {row.point_step}{point}."
        )
    confidence = f"{1 - row.alpha:.0%}"
    if row.lo is None or row.hi is None:
        return (
            f"No step reaches {confidence} confidence (the set is empty); "
            f"the most probable decisive step is step {row.point_step}{point}."
        )
    where = _steps_text(row.lo, row.hi)
    if point_agent is None:
        sentence = f"With {confidence} confidence the decisive step is in {where}{agent}."
    else:
        # Whose the most probable step is, and another agent's mass only where it is
        # another's (a reporter's answer read as sql_runner's beside "steps 11-16").
        sentence = (
            f"With {confidence} confidence the decisive step is in {where}; the most "
            f"probable is step {row.point_step}{point}."
        )
    steps = len(row.probabilities or [])
    size = row.hi - row.lo + 1
    if steps and size >= WIDE_SET_SHARE * steps:
        sentence += MSG_WIDE_SET.format(size=size, steps=steps)
    return sentence


def _short_note(row: TrajectoryAttribution) -> str:
    """Why labelling this system's rollouts brings no claim yet, when the queue put it last
    for that reason (``labelling_queue.REASON_SHORT``); else ""."""
    if row.queue_reason != REASON_SHORT or row.is_calibrated:
        return ""
    system = row.trajectory.agent_system
    queued = TrajectoryAttribution.objects.filter(
        project_id=row.project_id, queue_rank__isnull=False, trajectory__agent_system=system
    ).count()
    return MSG_SHORT.format(
        system=system or "(unknown system)",
        queued=queued,
        are="is" if queued == 1 else "are",
        needed=row.labels_needed,
    )


def attribution_panel(
    trajectory: Trajectory, *, user: User | AnonymousUser | None = None
) -> dict[str, Any] | None:
    """Everything the rollout page shows about attribution; None for rollouts without one.

    ``can_label`` is None when no user is given (the template then shows the form and the
    view enforces write access), else whether the user may label.
    """
    row = (
        TrajectoryAttribution.objects.filter(trajectory=trajectory)
        .select_related("calibration", "trajectory")
        .first()
    )
    if row is None:
        return None
    labels = list(
        Label.objects.filter(trajectory=trajectory)
        .select_related("author", "token")
        .order_by("-created_at", "-id")
    )
    project = trajectory.project
    slug = project.slug
    # One membership read for the label form and every label's remove button.
    membership = membership_of(user, project.pk) if user is not None else None
    remover = membership if membership is not None and membership.can_write else None
    figure_id = f"attribution-strip-{trajectory.pk}"
    calibrated = row.is_calibrated
    # Who took the most probable step and each labelled one (a label that names another
    # agent says both), in one read.
    agents = step_agents(trajectory.pk, {row.point_step, *(label.step_index for label in labels)})
    point_agent = agents.get(row.point_step)
    probabilities = row.probabilities
    ranking = heapq.nsmallest(
        RANKING_SHOWN, range(len(probabilities)), key=lambda i: (-probabilities[i], i)
    )
    next_rollout = next_in_queue(trajectory, row.queue_rank)
    return {
        "claim": calibrated,
        "labels_needed": row.labels_needed,
        "agent_system": trajectory.agent_system or "(unknown system)",
        "claim_notes": claim_notes(row),
        "ranking": [{"step": i, "percent": round(100 * row.probabilities[i])} for i in ranking],
        "queue_url": queue_url(project),
        "queue_rank": None if row.queue_rank is None else row.queue_rank + 1,
        "short_note": _short_note(row),
        "calibration_url": reverse("attribution:calibration", args=[slug]),
        "next_url": reverse("dashboard:rollout_detail", args=[slug, next_rollout])
        if next_rollout is not None
        else "",
        "trajectory_id": trajectory.pk,
        "project_slug": slug,
        "step_count": len(row.probabilities),
        "probabilities": row.probabilities,
        "lo": row.lo,
        "hi": row.hi,
        "set_size": set_size(row.interval),
        "is_empty": calibrated and row.lo is None,
        "point_step": row.point_step,
        "point_probability": row.probabilities[row.point_step] if row.probabilities else None,
        "agent": row.agent,
        "rollback_step": row.rollback_step,
        "alpha": row.alpha,
        "confidence": _confidence(row.alpha),
        "confidence_percent": None if row.alpha is None else round(100 * (1 - row.alpha)),
        "point_percent": round(100 * row.probabilities[row.point_step])
        if row.probabilities
        else None,
        "calibrated": calibrated,
        "basis": calibration_basis(row),
        "group": row.group,
        "scorer_version": row.scorer_version,
        "ranked_by": rollout_ranked_by(row),
        "sentence": attribution_sentence(
            row, miscoverage=project.miscoverage, point_agent=point_agent
        ),
        "point_agent": point_agent,
        "labels": [
            {
                "pk": label.pk,
                "removable": remover is not None
                and may_remove(label, user_id=remover.user_id, is_owner=remover.is_owner),
                "step_index": label.step_index,
                "agent": label.agent,
                "step_agent": agents.get(label.step_index, ""),
                "blames_another_agent": blames_another_agent(
                    label.agent, agents.get(label.step_index, "")
                ),
                "reason": label.reason,
                "source": label.source,
                "source_name": LABEL_SOURCE_NAMES.get(label.source, label.source),
                "author": label_author(label),
                "created_at": label.created_at,
                "in_set": covers(row.interval, label.step_index),
            }
            for label in labels
        ],
        "figure_id": figure_id,
        "figure": charts.probability_strip(
            row.probabilities,
            lo=row.lo,
            hi=row.hi,
            point_step=row.point_step,
            rollback_step=row.rollback_step,
        ),
        "can_label": None if user is None else remover is not None,
        "is_failed": trajectory.outcome == Outcome.FAILURE,
    }


def coverage_monitor(project: Project) -> dict[str, Any]:
    """Coverage of sets made before later human labels, against the promised 1 - alpha,
    per agent system (``by_system``): each system's sets promise coverage for its own
    rollouts, so each is tested on its own (one-sided binomial at WARNING_P_VALUE).

    The top-level counts pool every system, for the overview and the API; ``warning``
    names each system whose coverage is improbably low for its promise.
    """
    checks = list(
        CoverageCheck.objects.filter(project=project).values_list(
            "trajectory__agent_system", "covered", "alpha"
        )
    )
    by_system = monitor_by_system(
        [(system_key(system), covered, alpha) for system, covered, alpha in checks],
        p_threshold=WARNING_P_VALUE,
    )
    pooled = monitor("", [(covered, alpha) for _, covered, alpha in checks])
    warning = " ".join(
        MSG_COVERAGE_LOW.format(
            system=row.system,
            measured=row.measured,
            checked=row.checked,
            promised=row.promised,
            p_value=row.p_value,
        )
        for row in by_system
        if row.warns
    )
    return {
        "checked": pooled.checked,
        "covered": pooled.covered,
        "measured": pooled.measured,
        "promised": pooled.promised,
        "p_value": pooled.p_value,
        "warning": warning,
        "by_system": [row.to_dict() for row in by_system],
    }


def project_coverage(project: Project) -> dict[str, Any] | None:
    """Promised and measured coverage for the overview page; None before any calibration."""
    calibration = Calibration.objects.filter(project=project).first()
    if calibration is None:
        return None
    monitor = coverage_monitor(project)
    # Before any later label: the calibration page's estimate within each system's own
    # calibrating labels (tau on a random half, measured on the other, many splits).
    systems = (calibration.diagnostics or {}).get("systems", {})
    calibrated = sorted((calibration.by_system or {}).get("by_system", {}))
    held_out, measured = systems_held_out(systems, calibration.alpha, calibrated=calibrated)
    # Whose labels those are: the figure is only the measured systems' ("20 in all" read as
    # the project's while the other systems were too few to measure).
    unmeasured = sorted(set(systems) - {system for system, _ in measured})
    return {
        "promised": 1 - calibration.alpha,
        "measured": monitor["measured"],
        "labelled": monitor["checked"],
        "warning": monitor["warning"],
        "held_out": held_out,
        "held_out_labels": sum(labels for _, labels in measured),
        "held_out_basis": held_out_basis(measured, unmeasured),
    }


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def held_out_basis(measured: list[tuple[str, int]], unmeasured: list[str]) -> str:
    """Whose labels a held-out coverage is measured on (``measured``: each system and its
    calibrating labels), and which systems it leaves out for too few; "" with none.

    >>> held_out_basis([("airline", 20)], ["retail", "telecom"])
    "airline's 20 labels, in random halves; retail and telecom have too few to measure"
    >>> held_out_basis([("a", 1200), ("b", 10)], [])
    "1,210 labels: a's 1,200 and b's 10, in random halves"
    """
    if not measured:
        return ""
    if len(measured) == 1:
        [(system, labels)] = measured
        basis = f"{system}'s {labels:,} label{'' if labels == 1 else 's'}"
    else:
        total = sum(labels for _, labels in measured)
        basis = f"{total:,} labels: " + _and([f"{s}'s {n:,}" for s, n in measured])
    basis += ", in random halves"
    if unmeasured:
        have = "has" if len(unmeasured) == 1 else "have"
        basis += f"; {_and(unmeasured)} {have} too few to measure"
    return basis


def calibration_overview(project: Project) -> dict[str, Any]:
    """The calibration page: current calibration, held-out curve, set sizes, groups, monitor."""
    from attribution.services import MIN_TRAINING_LABELS

    calibration = Calibration.objects.filter(project=project).select_related("scorer").first()
    attributions = TrajectoryAttribution.objects.filter(project=project)
    sizes: Counter[int] = Counter()
    for lo, hi in attributions.filter(calibration__isnull=False).values_list("lo", "hi"):
        sizes[0 if lo is None or hi is None else hi - lo + 1] += 1
    failed = Trajectory.objects.filter(project=project, outcome=Outcome.FAILURE).count()
    context: dict[str, Any] = {
        "calibration": calibration,
        "monitor": coverage_monitor(project),
        "attributed": attributions.count(),
        "failed": failed,
        "set_sizes": sorted(sizes.items()),
        "figures": [],
        "groups": [],
        "not_calibrated": "",
        "min_training_labels": MIN_TRAINING_LABELS,
        "warning_p_value": WARNING_P_VALUE,
        "systems": system_calibration_rows(calibration),
        "progress": system_progress(project),
        "labelling_rule": labelling_rule(project),
        "gold_actions_calibrate": project.gold_actions_calibrate,
        "borrow_choices": _borrow_choices(project, calibration),
        "queue_url": queue_url(project),
    }
    if calibration is None:
        context["not_calibrated"] = MSG_NOT_CALIBRATED.format(
            needed=int(round(1 / project.miscoverage)) - 1, confidence=1 - project.miscoverage
        )
        return context
    systems = calibration.diagnostics.get("systems", {})
    context["groups"] = system_groups(calibration)
    context["curves"] = [
        {"system": system, "rows": data.get("curve", [])}
        for system, data in sorted(systems.items())
        if data.get("curve")
    ]
    context["promised_percent"] = round(100 * (1 - calibration.alpha))
    figures = []
    if context["curves"]:
        figures.append(
            (
                "coverage-alpha",
                "Coverage against alpha, per agent system",
                charts.coverage_against_alpha(
                    {row["system"]: row["rows"] for row in context["curves"]},
                    alpha=calibration.alpha,
                ),
            )
        )
    if sizes:
        figures.append(("set-sizes", "Set sizes", charts.set_size_distribution(dict(sizes))))
    by_system: dict[str, list[dict[str, Any]]] = {}
    for group in context["groups"]:
        if group["coverage"] is not None:
            by_system.setdefault(group["system"], []).append(group)
    if by_system:
        figures.append(
            (
                "coverage-groups",
                "Coverage per length bucket, per agent system",
                charts.coverage_by_group(by_system, promised=1 - calibration.alpha),
            )
        )
    context["figures"] = [{"id": fid, "title": title, "figure": fig} for fid, title, fig in figures]
    return context


def _borrow_choices(project: Project, calibration: Calibration | None) -> list[dict[str, Any]]:
    """Per agent system: what it may borrow (another system or every label pooled), what
    it borrows now ("" for its own labels only), and whether it calibrates on its own
    labels (``own``): a borrowing chosen for such a system waits until it has too few,
    which the page says instead of showing the choice as if it were in use."""
    systems = project_systems(project)
    chosen = project.calibration_borrow or {}
    own = set(systems_on_own_labels(calibration))
    return [
        {
            "system": system,
            "current": chosen.get(system, ""),
            "options": [other for other in systems if other != system],
            "own": system in own,
        }
        for system in systems
    ]


def systems_on_own_labels(calibration: Calibration | None) -> list[str]:
    """The agent systems that calibrate on their own labels in ``calibration``: a borrowing
    chosen for one of them is kept but not used while it has enough labels."""
    if calibration is None:
        return []
    return sorted(SystemCalibration.from_dict(calibration.by_system).by_system)


def borrowing_waiting(project: Project) -> list[str]:
    """The systems set to borrow that have enough labels of their own, so do not borrow."""
    chosen = {system for system, lender in (project.calibration_borrow or {}).items() if lender}
    latest = Calibration.objects.filter(project=project).first()
    return [system for system in systems_on_own_labels(latest) if system in chosen]
