"""What the pipeline stores of its own: the overview's project-wide aggregates."""

from __future__ import annotations

from django.db import models

from projects.models import Project


class ProjectOverview(models.Model):
    """The overview's aggregates over the whole project (failures by environment and
    model, decisive-step positions, failure rate per upload), stored by the refresh task
    so that the overview page reads a few rows instead of scanning every rollout."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="overview")
    data = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "dashboard_projectoverview"

    def __str__(self) -> str:
        return f"overview of project {self.project_id}"
