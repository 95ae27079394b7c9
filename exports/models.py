"""Repair-dataset export jobs and human corrections.

The tables keep the names they had when these models lived in the dashboard app
(exports/migrations/0001_initial.py moves them without copying a row).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from exports.core.inputs import CorrectionSource
from ingest.jobs import JobState, JobStatus
from ingest.models import Trajectory
from projects.models import Project

__all__ = ["Correction", "CorrectionKind", "ExportJob", "ExportStatus"]


ExportStatus = JobStatus


class ExportJob(JobState):
    # JobState's attempt: raised by every claim; only the run holding the latest number may
    # write to the row, so a redelivered task running beside the first cannot mix results.

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="export_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kinds = models.JSONField(default=list)
    filters = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=10, choices=ExportStatus.choices, default=ExportStatus.QUEUED
    )
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    # Relative to MEDIA_ROOT. Each run writes in a folder of its own,
    # exports/<project_id>/<job_id>/<attempt>, and the run that finishes points this at it;
    # until then it names the job's folder (and still does for jobs done before attempts).
    files_dir = models.CharField(max_length=255, blank=True)
    error_message = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "dashboard_exportjob"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.project_id}"

    @property
    def progress_percent(self) -> int:
        if self.status == ExportStatus.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(99, int(100 * self.progress_done / self.progress_total))


class CorrectionKind(models.TextChoices):
    MESSAGE = "message", "Message"
    TOOL_CALL = "tool_call", "Tool call"


class Correction(models.Model):
    """What the agent should have done at one step of a failed rollout, said by a human."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="corrections")
    step_index = models.PositiveIntegerField()
    kind = models.CharField(
        max_length=10, choices=CorrectionKind.choices, default=CorrectionKind.MESSAGE
    )
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_args = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=20, default=CorrectionSource.HUMAN, editable=False)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "dashboard_correction"
        ordering = ["trajectory_id", "step_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory", "step_index"], name="correction_unique_step"
            )
        ]

    def __str__(self) -> str:
        return f"correction of {self.trajectory_id}#{self.step_index}"
