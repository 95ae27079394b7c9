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


class RefreshKind(models.TextChoices):
    FULL = "full", "Full"
    INCREMENTAL = "incremental", "Incremental"


class ProjectRefresh(JobState):
    """One run of the chain after new rollouts (action analysis, attribution, clustering,
    overview). At most one waits queued per project: later requests join it.

    A request may ask for a full refresh (a label changed: the calibration must be made
    again) and may name rollouts that changed in place (an outcome attached later); when
    it ran, ``kind`` and ``reason`` say which refresh ran and why (pipeline.incremental).
    A full refresh stores in ``basis`` what later incremental ones reuse (the scorer's
    version, the calibration, the counts its thresholds compare against)."""

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
    full_requested = models.BooleanField(default=False)
    request_reason = models.CharField(max_length=200, blank=True)
    rollout_ids = models.JSONField(default=list, blank=True)
    kind = models.CharField(max_length=12, choices=RefreshKind.choices, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    rollouts = models.PositiveIntegerField(default=0)
    basis = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "status"], name="refresh_project_status"),
            # The last successful refresh, found without reading the earlier ones.
            models.Index(fields=["project", "status", "started_at"], name="refresh_project_done"),
        ]

    def __str__(self) -> str:
        return f"refresh {self.pk} of {self.project_id} ({self.status})"

    @property
    def job_name(self) -> str:
        """What the jobs this refresh runs inside itself record as their origin
        (analysis.ClusteringRun.origin), so a redelivered attempt finds them again."""
        return f"refresh {self.pk}"


class OverviewContribution(models.Model):
    """One rollout's share of the overview's aggregates (pipeline.overview_counts), kept so
    that an incremental refresh moves the aggregates by the difference for the rollouts it
    touched instead of counting the project again. The rollout is a plain id, not a key:
    the row must outlive a deleted rollout until its share is taken back."""

    trajectory_id = models.BigIntegerField(primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    upload_id = models.BigIntegerField()
    environment = models.CharField(max_length=100, blank=True)
    policy_model = models.CharField(max_length=100, blank=True)
    failed = models.BooleanField(default=False)
    succeeded = models.BooleanField(default=False)
    labelled = models.BooleanField(default=False)
    # Every label of the rollout derived by a rule (LabelSource.DERIVED), none given.
    labelled_by_rule = models.BooleanField(default=False)
    label_buckets = models.JSONField(default=list, blank=True)
    predicted_bucket = models.SmallIntegerField(null=True, blank=True)
    deviation_bucket = models.SmallIntegerField(null=True, blank=True)
    # Its environment and length bucket, and per tool [calls, errors, mutating calls]
    # (analysis.core.tool_stats).
    stratum = models.CharField(max_length=120, blank=True)
    tools = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"overview share of rollout {self.trajectory_id}"


class OverviewPendingShare(models.Model):
    """A live rollout written since the overview's counters last moved: one row per
    assembly that wrote it, added inside the assembly's transaction (so none is missed)
    and taken by ``overview_counts_catch_up`` on the closing sweep, which moves the
    counters once for every rollout written meanwhile instead of once per assembly. An
    append-only log (no unique key): the catch-up deletes exactly the rows it read, so a
    rollout written again meanwhile keeps its newer row for the next one."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trajectory_id = models.BigIntegerField()

    def __str__(self) -> str:
        return f"overview share of rollout {self.trajectory_id} to move"
