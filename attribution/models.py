"""Stored attribution state: trained scorers, calibrations, one attribution per rollout.

The algorithms live in ``attribution.core``; these rows only keep what it produced.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ingest.models import Label, Trajectory
from projects.models import Project


class TrajectoryAttribution(models.Model):
    """The current attribution of one failed rollout (one row per rollout, replaced)."""

    trajectory = models.OneToOneField(
        Trajectory, on_delete=models.CASCADE, related_name="attribution"
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="trajectory_attributions"
    )
    probabilities = models.JSONField(default=list)
    # The prediction set [lo, hi]; both null when the set is empty or nothing is calibrated.
    lo = models.PositiveIntegerField(null=True, blank=True)
    hi = models.PositiveIntegerField(null=True, blank=True)
    point_step = models.PositiveIntegerField()
    agent = models.CharField(max_length=200, blank=True)
    rollback_step = models.PositiveIntegerField(null=True, blank=True)
    alpha = models.FloatField(null=True, blank=True)
    tau = models.FloatField(null=True, blank=True)
    group = models.CharField(max_length=100, blank=True)
    calibration_group = models.CharField(max_length=100, blank=True)
    calibration = models.ForeignKey(
        "Calibration", null=True, blank=True, on_delete=models.SET_NULL, related_name="attributions"
    )
    scorer_version = models.CharField(max_length=120)
    # Whether the set carries a confidence claim: False when the rollout's agent system has
    # too few calibrating labels (then lo, hi, rollback_step and tau stay null and
    # labels_needed says how many more that system needs). calibration_source is "own",
    # "borrowed" (the project opted in; calibration_system names the lender) or "none".
    claim = models.BooleanField(default=False)
    calibration_source = models.CharField(max_length=20, blank=True)
    calibration_system = models.CharField(max_length=200, blank=True)
    labels_needed = models.PositiveIntegerField(default=0)
    # Place in the labelling queue (attribution.core.labelling_queue), null for a rollout
    # that already has a label that calibrates; the reason is the queue rule's step.
    queue_rank = models.PositiveIntegerField(null=True, blank=True)
    queue_reason = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "lo"], name="attr_project_lo"),
            models.Index(fields=["project", "queue_rank"], name="attr_project_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.trajectory_id}: [{self.lo}, {self.hi}]"

    @property
    def is_calibrated(self) -> bool:
        return self.calibration_id is not None

    @property
    def interval(self) -> tuple[int, int] | None:
        """The prediction set as ``attribution.core.metrics`` takes it (None when empty)."""
        return None if self.lo is None or self.hi is None else (self.lo, self.hi)


class TrainedScorer(models.Model):
    """A fitted step scorer, stored as versioned bytes from ``attribution.core``."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trained_scorers")
    version = models.CharField(max_length=120)
    kind = models.CharField(max_length=40)
    params = models.JSONField(default=dict, blank=True)
    blob = models.BinaryField()
    metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="scorer_unique_version")
        ]

    def __str__(self) -> str:
        return self.version


class Calibration(models.Model):
    """tau per group at one alpha, from the project's labelled failed rollouts."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="calibrations")
    scorer = models.ForeignKey(
        TrainedScorer, null=True, blank=True, on_delete=models.SET_NULL, related_name="calibrations"
    )
    scorer_version = models.CharField(max_length=120)
    alpha = models.FloatField()
    variant = models.CharField(max_length=20, default="two_sided")
    grouping = models.CharField(max_length=20, default="length")
    pooled_tau = models.FloatField()
    tau_by_group = models.JSONField(default=dict, blank=True)
    m = models.PositiveIntegerField()
    m_by_group = models.JSONField(default=dict, blank=True)
    min_group_size = models.PositiveIntegerField(default=0)
    # The per-agent-system calibration (attribution.core.system_calibration.SystemCalibration
    # as a dict); the fields above are the calibration of every calibrating label pooled.
    by_system = models.JSONField(default=dict, blank=True)
    # Which label sources calibrated (e.g. ["dataset", "gold_actions", "human"]).
    label_sources = models.JSONField(default=list, blank=True)
    # Held-out measurements made when calibrating (coverage against alpha, per group).
    diagnostics = models.JSONField(default=dict, blank=True)
    # Hash of everything that went in: a refresh with the same inputs reuses the row.
    fingerprint = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"alpha={self.alpha} m={self.m} ({self.scorer_version})"


class CoverageCheck(models.Model):
    """A human label compared with the set that was shown before the label existed."""

    label = models.OneToOneField(Label, on_delete=models.CASCADE, related_name="coverage_check")
    trajectory = models.ForeignKey(
        Trajectory, on_delete=models.CASCADE, related_name="coverage_checks"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="coverage_checks")
    set_lo = models.PositiveIntegerField(null=True, blank=True)
    set_hi = models.PositiveIntegerField(null=True, blank=True)
    alpha = models.FloatField()
    covered = models.BooleanField()
    calibration = models.ForeignKey(
        Calibration, null=True, blank=True, on_delete=models.SET_NULL, related_name="checks"
    )
    group = models.CharField(max_length=100, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.trajectory_id}: {'covered' if self.covered else 'missed'}"


class ActionAnalysis(models.Model):
    """The project's action-level analysis (see attribution/core/gold_actions.py), stored
    once per refresh so that no request recomputes it over the whole project."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="action_analysis"
    )
    summary = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "dashboard_actionanalysis"

    def __str__(self) -> str:
        return f"action analysis of project {self.project_id}"


class RolloutDeviation(models.Model):
    """How one rollout's tool calls deviate from its gold actions."""

    trajectory = models.OneToOneField(
        Trajectory, on_delete=models.CASCADE, related_name="action_deviation"
    )
    mutating = models.PositiveIntegerField(default=0)
    read_only = models.PositiveIntegerField(default=0)
    # The first mutating call that no gold action matches (None: no such call).
    decisive_step = models.PositiveIntegerField(null=True, blank=True)
    decisive_reason = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "dashboard_rolloutdeviation"

    def __str__(self) -> str:
        return f"deviations of rollout {self.trajectory_id}"
