"""Calibrate per agent system and store it; build each failed rollout's attribution row.

The refresh (attribution.services) scores the steps; this module turns the labelled
held-out rollouts' probabilities into one :class:`~attribution.models.Calibration` row
(every calibrating label pooled in its top-level fields, one tau per agent system in
``by_system``) and applies it per rollout with ``attribute_per_system``: a rollout whose
system has too few calibrating labels gets no set, no rollback point and no tau, only the
scorer's ranking and the number of labels its system still needs.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from attribution.core.conformal import (
    GROUPING_LENGTH,
    POOLED,
    TWO_SIDED,
    AlphaTooSmallError,
    calibrate,
    group_key,
)
from attribution.core.diagnostics import coverage_curve, curve_alphas
from attribution.core.system_calibration import (
    SystemCalibration,
    attribute_per_system,
    calibrate_per_system,
    system_key,
)
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from ingest.models import Trajectory
from projects.models import Project

MIN_GROUP_SIZE = 30
RANDOM_STATE = 0


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def borrowing(project: Project, systems: Sequence[str]) -> dict[str, str]:
    """The project's opt-in borrowing, keyed like the systems, without self-borrowing or
    lenders that are no system of the project (a stale setting must not fail a refresh)."""
    known = {system_key(s) for s in systems}
    chosen: dict[str, str] = {}
    for system, lender in (project.calibration_borrow or {}).items():
        key = system_key(str(system))
        target = POOLED if lender == POOLED else system_key(str(lender))
        if target != key and (target == POOLED or target in known):
            chosen[key] = target
    return chosen


def _system_diagnostics(
    probabilities: Sequence[Any],
    true_steps: Sequence[int],
    trajectories: Sequence[Trajectory],
    sources: Mapping[int, str],
    *,
    alphas: Sequence[float],
) -> dict[str, Any]:
    """Per agent system: labels used, their sources and environments, and the held-out
    coverage and removal curve (coverage per environment inside it), with the same curve's
    coverage per length bucket (``length_curve``): within a system, tau is per bucket."""
    members: dict[str, list[int]] = {}
    for position, trajectory in enumerate(trajectories):
        members.setdefault(system_key(trajectory.agent_system), []).append(position)
    systems: dict[str, Any] = {}
    for system, positions in sorted(members.items()):
        environments = [trajectories[i].environment or "(none)" for i in positions]
        system_probabilities = [probabilities[i] for i in positions]
        system_steps = [true_steps[i] for i in positions]
        systems[system] = {
            "labels": len(positions),
            "sources": dict(Counter(sources[trajectories[i].pk] for i in positions)),
            "environments": dict(Counter(environments)),
            "curve": coverage_curve(
                system_probabilities,
                system_steps,
                alphas=alphas,
                groups=environments,
                seed=RANDOM_STATE,
            ),
            "length_curve": coverage_curve(
                system_probabilities,
                system_steps,
                alphas=alphas,
                groups=[group_key(GROUPING_LENGTH, n_steps=len(p)) for p in system_probabilities],
                seed=RANDOM_STATE,
            ),
        }
    return systems


def calibration_store(
    *,
    project: Project,
    scorer_row: TrainedScorer,
    held_out: Sequence[Trajectory],
    probabilities: Mapping[int, Any],
    labels: Mapping[int, int],
    sources: Mapping[int, str],
    alpha: float,
) -> tuple[Calibration | None, SystemCalibration]:
    """The stored calibration (None below the fewest labels for alpha) and the per-system
    calibration that decides each rollout's claim (always made: it counts the labels)."""
    probs = [probabilities[t.pk] for t in held_out]
    steps = [labels[t.pk] for t in held_out]
    systems = [t.agent_system for t in held_out]
    lengths = [group_key(GROUPING_LENGTH, n_steps=len(p)) for p in probs]
    per_system = calibrate_per_system(
        probs,
        steps,
        systems,
        alpha=alpha,
        variant=TWO_SIDED,
        grouping=GROUPING_LENGTH,
        min_group_size=MIN_GROUP_SIZE,
        borrow=borrowing(project, systems),
    )
    if not held_out:
        return None, per_system
    try:
        pooled = calibrate(
            probs,
            steps,
            alpha=alpha,
            variant=TWO_SIDED,
            grouping=GROUPING_LENGTH,
            groups=lengths,
            min_group_size=MIN_GROUP_SIZE,
        )
    except AlphaTooSmallError:
        return None, per_system
    used = sorted(set(sources[t.pk] for t in held_out))
    fingerprint = _fingerprint(
        scorer_row.version,
        pooled.to_dict(),
        per_system.to_dict(),
        used,
        sorted((t.pk, labels[t.pk]) for t in held_out),
    )
    latest = Calibration.objects.filter(project=project).first()
    if latest is not None and latest.fingerprint == fingerprint:
        return latest, per_system
    alphas = curve_alphas(alpha)
    diagnostics = {
        "curve": coverage_curve(probs, steps, alphas=alphas, groups=lengths, seed=RANDOM_STATE),
        "held_out": len(held_out),
        "systems": _system_diagnostics(probs, steps, held_out, sources, alphas=alphas),
    }
    calibration = Calibration.objects.create(
        project=project,
        scorer=scorer_row,
        scorer_version=scorer_row.version,
        alpha=pooled.alpha,
        variant=pooled.variant,
        grouping=pooled.grouping,
        pooled_tau=pooled.pooled_tau,
        tau_by_group=pooled.tau_by_group,
        m=pooled.m,
        m_by_group=pooled.m_by_group,
        min_group_size=pooled.min_group_size,
        by_system=per_system.to_dict(),
        label_sources=used,
        diagnostics=diagnostics,
        fingerprint=fingerprint,
    )
    return calibration, per_system


def attribution_row(
    trajectory: Trajectory,
    record: Any,
    probabilities: Any,
    per_system: SystemCalibration,
    calibration: Calibration | None,
    scorer_row: TrainedScorer,
) -> TrajectoryAttribution:
    """The attribution of one failed rollout; without a claim, no set and no rollback."""
    result = attribute_per_system(record, probabilities, per_system)
    claim = result.claim and calibration is not None
    return TrajectoryAttribution(
        trajectory=trajectory,
        project_id=trajectory.project_id,
        probabilities=[round(p, 6) for p in result.probabilities],
        lo=result.lo if claim else None,
        hi=result.hi if claim else None,
        point_step=result.point_step,
        agent=result.agent,
        rollback_step=result.rollback_step if claim else None,
        alpha=result.alpha if claim else None,
        tau=result.tau if claim else None,
        group=result.group,
        calibration_group=result.calibration_group if claim else "",
        calibration=calibration if claim else None,
        scorer_version=scorer_row.version,
        claim=claim,
        calibration_source=result.calibration_source,
        calibration_system=result.calibration_system,
        labels_needed=result.labels_needed,
    )
