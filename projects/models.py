"""Projects, their members and roles. The bottom layer: every other app points here.

The tables keep the names they had when these models lived in the dashboard app, so an
existing database moves over without copying a row (projects/migrations/0001_initial.py).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


WRITER_ROLES = frozenset({Role.OWNER, Role.MEMBER})
MIN_MISCOVERAGE = 0.01
MAX_MISCOVERAGE = 0.5


def default_miscoverage() -> float:
    """A new project's miscoverage alpha: FAULTLINE_ALPHA (sets hold the decisive step
    with probability at least 1 - alpha)."""
    return float(settings.FAULTLINE_ALPHA)


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # The conformal miscoverage alpha that calibration, rollout pages and exports use.
    miscoverage = models.FloatField(
        default=default_miscoverage,
        validators=[MinValueValidator(MIN_MISCOVERAGE), MaxValueValidator(MAX_MISCOVERAGE)],
    )
    # Whether labels derived from the tasks' gold actions calibrate the sets (the guarantee
    # then refers to that labelling rule), and which agent systems may borrow another
    # system's calibration ({system: other system, or "all" for every label pooled}).
    gold_actions_calibrate = models.BooleanField(default=False)
    calibration_borrow = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        db_table = "dashboard_project"
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
        db_table = "dashboard_membership"
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.project_id} ({self.role})"

    @property
    def can_write(self) -> bool:
        return self.role in WRITER_ROLES

    @property
    def is_owner(self) -> bool:
        return self.role == Role.OWNER


class ApiToken(models.Model):
    """One named API token of a project. Only its hash is kept; the token is shown once."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    # The first characters, so the settings page can tell tokens apart.
    prefix = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...) of {self.project_id}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
