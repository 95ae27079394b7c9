"""What exports read from the attribution and analysis apps.

Kept in one module so that the rest of the export code does not depend on how those
apps store their results. Until an app has stored anything, its reads return nothing:
the exports then rest on labels, corrections and successful rollouts alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet

from dashboard.exports.core.inputs import Decisive, Occurrence
from dashboard.models import Project
from ingest.models import Trajectory


def attributions(rollout_ids: Sequence[int], *, alpha: float | None) -> dict[int, Decisive]:
    """The stored attribution of each rollout (set, point, agent, rollback) at ``alpha``."""
    return {}


def occurrences(rollout_ids: Sequence[int]) -> dict[int, list[Occurrence]]:
    """The steps of each rollout that belong to a misbehaviour of the current clustering."""
    return {}


def with_misbehaviours(rollouts: QuerySet[Trajectory], ids: Sequence[int]) -> QuerySet[Trajectory]:
    """Only the rollouts with a step in one of these misbehaviours."""
    return rollouts.none()


def misbehaviour_choices(project: Project) -> list[dict[str, Any]]:
    """The project's misbehaviours for the filter form: id, name, category."""
    return []


def provenance(project: Project, *, alpha: float | None) -> dict[str, Any]:
    """Calibration, scorer and clustering run the export reads, with their versions."""
    return {"calibration": None, "scorer": None, "clustering_run": None}


def effective_alpha(project: Project, alpha: float | None) -> float | None:
    """The alpha the prediction sets are given at: the asked one, else the stored one."""
    return alpha
