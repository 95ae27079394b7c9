"""Reads of the dashboard: the stored overview, coverage and the action analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Max

from attribution.models import ActionAnalysis
from attribution.selectors import project_coverage
from ingest.models import Upload
from projects.models import Project


@dataclass(frozen=True)
class Coverage:
    promised: float
    measured: float | None
    labelled: int
    held_out: float | None = None
    held_out_labels: int = 0


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
    )


def action_analysis(*, project: Project) -> ActionAnalysis | None:
    return ActionAnalysis.objects.filter(project=project).first()


def last_activity(*, project: Project) -> Any:
    return Upload.objects.filter(project=project).aggregate(last=Max("created_at"))["last"]
