"""What exports read from the attribution and analysis apps.

Kept in one module so that the rest of the export code does not depend on how those apps
store their results. A project that has no attribution or clustering yet gives nothing
here: its exports then rest on labels, corrections and successful rollouts alone.

Alpha: the stored prediction sets are at the calibration's alpha. An export at another
alpha recalibrates tau with the attribution app's own per-system rule
(``attribution.recalibration``): the same calibrating labels, tau per agent system, and no
set or rollback point for a rollout whose system has too few calibrating labels at the
asked alpha (the manifest counts those rollouts per system), so that an export never
claims what the pages refuse. Each set is then recomputed from its stored probabilities.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from analysis.merges import resolve_merged
from analysis.models import ClusteringRun, Misbehaviour, RunStatus, WrongStepMembership
from analysis.selectors import active_misbehaviours
from attribution.core.conformal import prediction_set
from attribution.core.system_calibration import SystemCalibration, min_labels_for, system_key
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.recalibration import calibration_rollouts, recalibrate_per_system
from exports.core.filters import FilterError
from exports.core.inputs import Decisive, Occurrence
from ingest.models import Trajectory
from projects.models import Project

MSG_NO_CALIBRATION = (
    "No calibration exists yet, so there are no prediction sets at alpha {alpha}: "
    "label decisive steps and refresh the attribution, or leave alpha empty."
)
MSG_ALPHA_TOO_SMALL = (
    "alpha {alpha} is too small for every agent system's calibration rollouts: the "
    "largest system has {m}, so alpha must be at least 1/(m+1) = {least:.3f}."
)
MSG_NO_CLAIM_NOTE = (
    "Rollouts of an agent system with fewer calibrating labels than alpha {alpha} needs "
    "({needed}) have no prediction set and no rollback point in this export, as on the "
    "rollout pages."
)
ALPHA_EPSILON = 1e-9
MSG_NO_MISBEHAVIOUR = "misbehaviours: this project has no misbehaviour {ids}."


class SourceError(FilterError):
    """A filter the stored attribution or clustering cannot serve; the message says why."""


def misbehaviours_check(project: Project, ids: Sequence[int]) -> None:
    """Refuse misbehaviour ids of no misbehaviour of the project (merged ones count: their
    steps went to the one they were merged into), rather than export nothing."""
    known = set(
        Misbehaviour.objects.filter(project=project, pk__in=ids).values_list("pk", flat=True)
    )
    missing = sorted(set(ids) - known)
    if missing:
        shown = ", ".join(str(i) for i in missing)
        raise SourceError(MSG_NO_MISBEHAVIOUR.format(ids=shown), field="misbehaviours")


def _category_name(misbehaviour: Any) -> str:
    category = misbehaviour.category
    if category is None:
        return ""
    return f"{category.code} {category.name}".strip() if category.code else category.name


def _description(misbehaviour: Any) -> str:
    terms = ", ".join(str(t) for t in (misbehaviour.terms or [])[:6])
    return misbehaviour.pattern or terms


class ProjectSources:
    """The attribution and misbehaviours of one project, read for one export at one alpha.

    Raises :class:`SourceError` when ``alpha`` cannot be served.
    """

    def __init__(self, project: Project, alpha: float | None) -> None:
        self.project = project
        self.requested_alpha = alpha
        self.calibration = (
            Calibration.objects.filter(project=project).select_related("scorer").first()
        )
        self.recalibrated: SystemCalibration | None = None
        # Exported rollouts per agent system, and those of them without a set.
        self.served: Counter[str] = Counter()
        self.without_claim: Counter[str] = Counter()
        if alpha is None:
            self.alpha = self.calibration.alpha if self.calibration else None
        elif self.calibration is None:
            raise SourceError(MSG_NO_CALIBRATION.format(alpha=alpha), field="alpha")
        elif abs(alpha - self.calibration.alpha) < ALPHA_EPSILON:
            self.alpha = self.calibration.alpha
        else:
            self.recalibrated = self._recalibrate(alpha)
            self.alpha = alpha
        self._by_pk: dict[int, Misbehaviour] | None = None

    def _recalibrate(self, alpha: float) -> SystemCalibration:
        assert self.calibration is not None
        rollouts = calibration_rollouts(self.calibration)
        recalibrated = recalibrate_per_system(self.calibration, alpha, rollouts)
        if not recalibrated.by_system and recalibrated.pooled is None:
            m = max(recalibrated.labels_by_system.values(), default=0)
            raise SourceError(
                MSG_ALPHA_TOO_SMALL.format(alpha=alpha, m=m, least=1 / (m + 1)), field="alpha"
            )
        return recalibrated

    def attributions(self, rollout_ids: Sequence[int]) -> dict[int, Decisive]:
        """The attribution of each rollout (set, point, rollback) at the export's
        alpha; a rollout of a system without a claim has no set and no rollback point."""
        found: dict[int, Decisive] = {}
        rows = TrajectoryAttribution.objects.filter(trajectory_id__in=rollout_ids).values_list(
            "trajectory_id",
            "probabilities",
            "lo",
            "hi",
            "point_step",
            "rollback_step",
            "alpha",
            "claim",
            "trajectory__agent_system",
            "trajectory__environment",
        )
        for row in rows:
            rollout_id, probs, lo, hi, point, rollback, alpha, claim, system, env = row
            if self.recalibrated is not None:
                decision = self.recalibrated.decision(
                    system, n_steps=len(probs or []), environment=env
                )
                interval = None
                if decision.tau is not None and probs:
                    interval = prediction_set(probs, decision.tau, self.recalibrated.variant)
                lo, hi = interval if interval is not None else (None, None)
                claim = decision.claim
                rollback = lo
                alpha = self.recalibrated.alpha if claim else None
            self.served[system_key(system)] += 1
            if not claim:
                self.without_claim[system_key(system)] += 1
            found[rollout_id] = Decisive(
                lo=lo, hi=hi, point_step=point, rollback_step=rollback, alpha=alpha
            )
        return found

    def _systems(self) -> dict[str, Any]:
        """Per agent system: calibrating labels, whether it claims (own, borrowed, none),
        labels still needed, and the exported rollouts left without a set."""
        assert self.calibration is not None
        per_system = self.recalibrated
        if per_system is None and self.calibration.by_system:
            per_system = SystemCalibration.from_dict(self.calibration.by_system)
        if per_system is None:
            return {}
        systems = set(per_system.labels_by_system) | set(per_system.borrow) | set(self.served)
        described: dict[str, Any] = {}
        for system in sorted(systems):
            # The source does not depend on the length bucket: any length decides it.
            decision = per_system.decision(system, n_steps=1)
            described[system] = {
                "calibrating_labels": decision.labels,
                "labels_needed": decision.labels_needed,
                "calibration": decision.source,
                "lender": decision.source_system if decision.source == "borrowed" else "",
                "rollouts": self.served.get(system, 0),
                "rollouts_without_claim": self.without_claim.get(system, 0),
            }
        return described

    def _misbehaviour(self, pk: int) -> Any:
        # A merged misbehaviour's steps count for the one it joined (analysis.merges); the
        # project's misbehaviours are read once per export.
        if self._by_pk is None:
            rows = Misbehaviour.objects.filter(project=self.project).select_related("category")
            self._by_pk = {row.pk: row for row in rows}
        return resolve_merged(self._by_pk.get(pk), self._by_pk)

    def occurrences(self, rollout_ids: Sequence[int]) -> dict[int, list[Occurrence]]:
        """The steps of each rollout that belong to a misbehaviour of the current clustering."""
        found: dict[int, list[Occurrence]] = {}
        rows = WrongStepMembership.objects.filter(
            project=self.project, step__trajectory_id__in=rollout_ids, misbehaviour__isnull=False
        ).values_list("step__trajectory_id", "step__index", "misbehaviour_id")
        for rollout_id, index, misbehaviour_id in rows.order_by(
            "step__trajectory_id", "step__index"
        ):
            misbehaviour = self._misbehaviour(misbehaviour_id)
            found.setdefault(rollout_id, []).append(
                Occurrence(
                    step=index,
                    misbehaviour_id=misbehaviour.pk,
                    name=misbehaviour.display_name,
                    category=_category_name(misbehaviour),
                    description=_description(misbehaviour),
                )
            )
        return found

    def provenance(self) -> dict[str, Any]:
        """Calibration, scorer and clustering run the export read, with their versions."""

        calibration = scorer = None
        if self.calibration is not None:
            calibration = {
                "id": self.calibration.pk,
                "alpha": self.calibration.alpha,
                "m": self.calibration.m,
                "grouping": self.calibration.grouping,
                "variant": self.calibration.variant,
                "fingerprint": self.calibration.fingerprint,
                "created_at": self.calibration.created_at.isoformat(),
                "recalibrated_at_alpha": self.recalibrated.alpha
                if self.recalibrated is not None
                else None,
                "per_system": True,
                "systems": self._systems(),
                "no_claim_note": MSG_NO_CLAIM_NOTE.format(
                    alpha=self.alpha, needed=min_labels_for(float(self.alpha))
                )
                if self.alpha is not None
                else "",
            }
            row = self.calibration.scorer
            scorer = {
                "id": row.pk if row else None,
                "version": self.calibration.scorer_version,
                "kind": row.kind if row else None,
            }
        else:
            row = TrainedScorer.objects.filter(project=self.project).first()
            if row is not None:
                scorer = {"id": row.pk, "version": row.version, "kind": row.kind}
        run = (
            ClusteringRun.objects.filter(project=self.project, status=RunStatus.DONE)
            .order_by("-finished_at", "-id")
            .first()
        )
        clustering_run = None
        if run is not None:
            clustering_run = {
                "id": run.pk,
                "kind": run.kind,
                "backend": run.backend,
                "base_run": run.base_run_id,
                "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            }
        return {"calibration": calibration, "scorer": scorer, "clustering_run": clustering_run}


def with_misbehaviours(rollouts: QuerySet[Trajectory], ids: Sequence[int]) -> QuerySet[Trajectory]:
    """Only the rollouts with a step in one of these misbehaviours: ids that hold steps now
    (``analysis.selectors.misbehaviours_now``; a merge moves its steps to the one it
    joined)."""
    memberships = WrongStepMembership.objects.filter(
        step__trajectory=OuterRef("pk"), misbehaviour_id__in=list(ids)
    )
    return rollouts.filter(Exists(memberships))


def misbehaviour_choices(project: Project) -> list[dict[str, Any]]:
    """The project's active misbehaviours for the filter form: id, name, category."""

    return [
        {"id": m.pk, "name": m.display_name, "category": _category_name(m)}
        for m in active_misbehaviours(project)
    ]
