"""Reads of the dashboard: the stored overview, coverage and the action analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Max

from attribution.calibration_store import MIN_GROUP_SIZE
from attribution.models import ActionAnalysis
from attribution.selectors import project_coverage
from ingest.models import Upload
from projects.models import Project

# Later labels needed before the overview shows the share of them inside their set as a
# measured coverage. The same minimum the calibration asks of a length bucket before giving
# it its own tau (MIN_GROUP_SIZE, 30): at 30 the coverage monitor's one-sided binomial test
# (p < 0.05) flags a true 70% against a 90% promise 84% of the time, at 10 labels only 35%,
# and 1 label can only read 0% or 100%.
MIN_COVERAGE_CHECKS = MIN_GROUP_SIZE


@dataclass(frozen=True)
class Coverage:
    promised: float
    measured: float | None
    labelled: int
    held_out: float | None = None
    held_out_labels: int = 0
    held_out_basis: str = ""  # whose labels held_out is measured on (and whose are too few)
    min_checks: int = MIN_COVERAGE_CHECKS

    @property
    def is_measured(self) -> bool:
        """Whether enough later labels were checked for ``measured`` to mean something."""
        return self.measured is not None and self.labelled >= self.min_checks


def coverage(*, project: Project) -> Coverage | None:
    """Measured against promised coverage from the attribution app, when it has one."""
    data = project_coverage(project)
    if data is None:
        return None
    return Coverage(
        promised=float(data["promised"]),
        measured=data["measured"],
        labelled=int(data["labelled"]),
        held_out=data["held_out"],
        held_out_labels=int(data["held_out_labels"]),
        held_out_basis=str(data["held_out_basis"]),
    )


def action_analysis(*, project: Project) -> ActionAnalysis | None:
    return ActionAnalysis.objects.filter(project=project).first()


def last_activity(*, project: Project) -> Any:
    return Upload.objects.filter(project=project).aggregate(last=Max("created_at"))["last"]
