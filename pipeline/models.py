"""What the pipeline stores of its own: the overview's project-wide aggregates."""

from __future__ import annotations

from django.db import models

from ingest.jobs import JobState, JobStatus
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


RefreshStatus = JobStatus


class ProjectRefresh(JobState):
    """One run of the chain after new rollouts (action analysis, attribution, clustering,
    overview). At most one waits queued per project: later requests join it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="refreshes")
    status = models.CharField(
        max_length=10, choices=RefreshStatus.choices, default=RefreshStatus.QUEUED
    )
    stage = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "status"], name="refresh_project_status")]

    def __str__(self) -> str:
        return f"refresh {self.pk} of {self.project_id} ({self.status})"
