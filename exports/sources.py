"""What exports read from the attribution and analysis apps.

Kept in one module so that the rest of the export code does not depend on how those apps
store their results. A project that has no attribution or clustering yet gives nothing
here: its exports then rest on labels, corrections and successful rollouts alone.

Alpha: the stored prediction sets are at the calibration's alpha. An export at another
alpha recalibrates tau from the same calibration rollouts (the labelled failed rollouts the
scorer was not trained on, with their stored probabilities), so the sets keep their
finite-sample guarantee at the asked level, then recomputes each set from its stored
probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from analysis.models import ClusteringRun, Misbehaviour, RunStatus, WrongStepMembership
from analysis.selectors import active_misbehaviours
from attribution.core.conformal import AlphaTooSmallError, calibrate, prediction_set
from attribution.models import Calibration, TrainedScorer, TrajectoryAttribution
from attribution.services import in_training_half
from exports.core.filters import FilterError
from exports.core.inputs import Decisive, Occurrence
from ingest.core.records import Outcome
from ingest.models import Label, Trajectory
from ingest.selectors import decisive_labels
from projects.models import Project

MSG_NO_CALIBRATION = (
    "No calibration exists yet, so there are no prediction sets at alpha {alpha}: "
    "label decisive steps and refresh the attribution, or leave alpha empty."
)
MSG_ALPHA_TOO_SMALL = (
    "alpha {alpha} is too small for the {m} calibration rollouts: it must be at least "
    "1/(m+1) = {least:.3f}."
)
ALPHA_EPSILON = 1e-9


class SourceError(FilterError):
    """A filter the stored attribution or clustering cannot serve; the message says why."""


def _misbehaviour_name(misbehaviour: Any) -> str:
    return misbehaviour.user_name or misbehaviour.name or misbehaviour.key


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
        self.recalibrated: Any = None
        if alpha is None:
            self.alpha = self.calibration.alpha if self.calibration else None
        elif self.calibration is None:
            raise SourceError(MSG_NO_CALIBRATION.format(alpha=alpha))
        elif abs(alpha - self.calibration.alpha) < ALPHA_EPSILON:
            self.alpha = self.calibration.alpha
        else:
            self.recalibrated = self._recalibrate(alpha)
            self.alpha = alpha
        self._merged: dict[int, Any] = {}

    def _recalibrate(self, alpha: float) -> Any:
        calibration = self.calibration
        assert calibration is not None
        trained = bool((calibration.scorer.metrics if calibration.scorer else {}).get("trained_on"))
        labels = {
            rollout_id: label.step_index
            for rollout_id, label in decisive_labels(
                Label.objects.filter(
                    trajectory__project=self.project, trajectory__outcome=Outcome.FAILURE
                )
            ).items()
        }
        probabilities, steps, groups = [], [], []
        attributions = TrajectoryAttribution.objects.filter(
            project=self.project, trajectory_id__in=list(labels), calibration=calibration
        ).values_list(
            "trajectory_id",
            "probabilities",
            "group",
            "trajectory__task_id",
            "trajectory__external_id",
        )
        for rollout_id, probs, group, task_id, external_id in attributions.order_by(
            "trajectory_id"
        ):
            step = labels[rollout_id]
            if not probs or step >= len(probs):
                continue
            if trained and in_training_half(task_id or external_id):
                continue
            probabilities.append(probs)
            steps.append(step)
            groups.append(group)
        try:
            return calibrate(
                probabilities,
                steps,
                alpha=alpha,
                variant=calibration.variant,
                grouping=calibration.grouping,
                groups=groups,
                min_group_size=calibration.min_group_size,
            )
        except AlphaTooSmallError:
            m = len(probabilities)
            raise SourceError(
                MSG_ALPHA_TOO_SMALL.format(alpha=alpha, m=m, least=1 / (m + 1))
            ) from None

    def attributions(self, rollout_ids: Sequence[int]) -> dict[int, Decisive]:
        """The attribution of each rollout (set, point, agent, rollback) at the export's alpha."""
        found: dict[int, Decisive] = {}
        rows = TrajectoryAttribution.objects.filter(trajectory_id__in=rollout_ids).values_list(
            "trajectory_id",
            "probabilities",
            "lo",
            "hi",
            "point_step",
            "agent",
            "rollback_step",
            "alpha",
            "group",
        )
        for rollout_id, probs, lo, hi, point, agent, rollback, alpha, group in rows:
            if self.recalibrated is not None and probs:
                interval = prediction_set(
                    probs, self.recalibrated.tau_for(group), self.recalibrated.variant
                )
                lo, hi = interval if interval is not None else (None, None)
                rollback, alpha = lo, self.recalibrated.alpha
            found[rollout_id] = Decisive(
                lo=lo, hi=hi, point_step=point, agent=agent, rollback_step=rollback, alpha=alpha
            )
        return found

    def _misbehaviour(self, pk: int) -> Any:
        # Cached per export; a merged misbehaviour's steps count for the one it joined.
        if pk not in self._merged:
            row = Misbehaviour.objects.select_related("category").get(pk=pk)
            hops = 0
            while row.merged_into_id and hops < 10:
                row = Misbehaviour.objects.select_related("category").get(pk=row.merged_into_id)
                hops += 1
            self._merged[pk] = row
        return self._merged[pk]

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
                    name=_misbehaviour_name(misbehaviour),
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
    """Only the rollouts with a step in one of these misbehaviours (or one merged into them)."""

    wanted = list(ids)
    memberships = WrongStepMembership.objects.filter(step__trajectory=OuterRef("pk")).filter(
        misbehaviour_id__in=wanted
    ) | WrongStepMembership.objects.filter(step__trajectory=OuterRef("pk")).filter(
        misbehaviour__merged_into_id__in=wanted
    )
    return rollouts.filter(Exists(memberships))


def misbehaviour_choices(project: Project) -> list[dict[str, Any]]:
    """The project's active misbehaviours for the filter form: id, name, category."""

    return [
        {"id": m.pk, "name": _misbehaviour_name(m), "category": _category_name(m)}
        for m in active_misbehaviours(project)
    ]
