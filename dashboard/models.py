from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # Only a hash of the API token is kept; the token itself is shown once.
    api_token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    api_token_prefix = models.CharField(max_length=12, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.project_id} ({self.role})"

    @property
    def can_write(self) -> bool:
        return self.role in (Role.OWNER, Role.MEMBER)


class ActionAnalysis(models.Model):
    """The project's action-level analysis (see attribution/core/gold_actions.py), stored once
    per refresh so that no request recomputes it over the whole project."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="action_analysis"
    )
    summary = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"action analysis of project {self.project_id}"


class ProjectOverview(models.Model):
    """The overview's aggregates over the whole project (failures by environment and
    model, decisive-step positions, failure rate per upload), stored by the refresh task
    so that the overview page reads a few rows instead of scanning every rollout."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="overview")
    data = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"overview of project {self.project_id}"


class RolloutDeviation(models.Model):
    """How one rollout's tool calls deviate from its gold actions."""

    trajectory = models.OneToOneField(
        "ingest.Trajectory", on_delete=models.CASCADE, related_name="action_deviation"
    )
    mutating = models.PositiveIntegerField(default=0)
    read_only = models.PositiveIntegerField(default=0)
    # The first mutating call that no gold action matches (None: no such call).
    decisive_step = models.PositiveIntegerField(null=True, blank=True)
    decisive_reason = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"deviations of rollout {self.trajectory_id}"


from dashboard.exports.models import (  # noqa: E402,F401
    Correction,
    CorrectionKind,
    ExportJob,
    ExportStatus,
)
