"""Misbehaviours: clusters of wrong steps, their runs, their taxonomy and cached vectors."""

from __future__ import annotations

from django.db import models
from django.urls import reverse

from analysis.core.mast import STRONG_SUPPORT
from ingest.jobs import JobState, JobStatus
from ingest.models import Step
from projects.models import Project

RunStatus = JobStatus


class RunKind(models.TextChoices):
    FULL = "full", "Full re-clustering"
    INCREMENTAL = "incremental", "Assignment of new steps"


class ClusteringRun(JobState):
    """One refresh of a project's misbehaviours: a full clustering or an assignment."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="clustering_runs")
    kind = models.CharField(max_length=12, choices=RunKind.choices, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    stage = models.CharField(max_length=40, blank=True)
    progress = models.FloatField(default=0.0)
    backend = models.CharField(max_length=20, blank=True)
    params = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    # HDBSCAN cluster label -> misbehaviour key, for assignments into this run's model.
    label_keys = models.JSONField(default=dict, blank=True)
    # The full run whose fitted model an incremental run assigned into.
    base_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="assignments"
    )
    model_file = models.CharField(max_length=255, blank=True)
    wrong_step_count = models.PositiveIntegerField(default=0)
    clustered_count = models.PositiveIntegerField(default=0)
    assigned_count = models.PositiveIntegerField(default=0)
    error_message = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    # The job that started the run inside its own ("refresh 12"); blank for a run of its
    # own task. A redelivered refresh takes over its run instead of leaving it "running".
    origin = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # An incremental refresh adds a run per closing rollout: the latest (full) run must
        # stay one index seek however many runs a project has gathered.
        indexes = [
            models.Index(fields=["project", "origin"], name="run_project_origin"),
            models.Index(
                fields=["project", "status", "kind", "-finished_at"], name="run_project_status"
            ),
            models.Index(fields=["project", "status", "-finished_at"], name="run_project_finished"),
            models.Index(fields=["project", "-created_at"], name="run_project_created"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.kind or 'pending'}, {self.status})"

    @property
    def progress_percent(self) -> int:
        return 100 if self.status == RunStatus.DONE else int(min(99, 100 * self.progress))


class TaxonomyCategory(models.Model):
    """A failure category: one of MAST's 14 built-in modes (no project) or a project's own."""

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="taxonomy_categories"
    )
    taxonomy = models.CharField(max_length=40, default="custom")
    code = models.CharField(max_length=40, blank=True)
    group = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "position", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["code"],
                condition=models.Q(project__isnull=True),
                name="category_unique_builtin_code",
            ),
            models.UniqueConstraint(
                fields=["project", "name"], name="category_unique_project_name"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}".strip()

    @property
    def is_builtin(self) -> bool:
        return self.project_id is None


class Misbehaviour(models.Model):
    """A recurring kind of wrong step. ``key`` survives re-clustering (overlap matching)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="misbehaviours")
    key = models.CharField(max_length=40)
    name = models.CharField(max_length=300, blank=True)
    user_name = models.CharField(max_length=300, blank=True)
    category = models.ForeignKey(
        TaxonomyCategory,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="misbehaviours",
    )
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged"
    )
    is_active = models.BooleanField(default=True)
    size = models.PositiveIntegerField(default=0)
    weight = models.FloatField(default=0.0)
    share = models.FloatField(default=0.0)
    pattern = models.CharField(max_length=300, blank=True)
    terms = models.JSONField(default=list, blank=True)
    exemplars = models.JSONField(default=list, blank=True)  # Step ids, strongest first
    environments = models.JSONField(default=dict, blank=True)  # name -> wrong steps
    policy_models = models.JSONField(default=dict, blank=True)
    environment_count = models.PositiveIntegerField(default=0)
    task_count = models.PositiveIntegerField(default=0)
    model_count = models.PositiveIntegerField(default=0)
    rollout_count = models.PositiveIntegerField(default=0)
    # {"environments", "tasks", "policy_models"}: how many of each it recurs in, its steps
    # there weighing at least half a wrong step (analysis.core.lift.recurs_in).
    recurs = models.JSONField(default=dict, blank=True)
    generalises = models.BooleanField(default=False)
    lift = models.FloatField(null=True, blank=True)
    # Crude and length-stratified (Mantel-Haenszel) failure risk ratios, compared only in
    # environments with successes (analysis.core.lift); None where nothing compares.
    lift_unadjusted = models.FloatField(null=True, blank=True)
    lift_adjusted = models.FloatField(null=True, blank=True)
    # The rollouts containing it in the lengths the adjusted lift compares (null: made
    # before it was stored), and why a lift is missing: the crude one's reason, else the
    # adjusted one's (an analysis.core.lift GAP_* code; "" when both exist).
    lift_adjusted_rollouts = models.PositiveIntegerField(null=True, blank=True)
    lift_gap = models.CharField(max_length=40, blank=True)
    signals = models.JSONField(default=dict, blank=True)  # signal -> share of members
    # Its members share no signal, agent, tool, error, phrase or diagnosis, only closeness
    # of wording (analysis.core.naming.is_loose): the pages say so beside the name.
    loose = models.BooleanField(default=False)
    template = models.CharField(max_length=300, blank=True)  # the error most members drew
    # The built-in MAST mode its signals and text suggest, until a user sets ``category``.
    suggested_category = models.ForeignKey(
        TaxonomyCategory,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The share of its steps pointing to that mode, and through what ("signal", "wording").
    suggestion_support = models.FloatField(null=True, blank=True)
    suggestion_basis = models.CharField(max_length=12, blank=True)
    # Rollouts of the lift's sample that contain it by assignment, every agent action of
    # each assigned alike: successful ones, and failed ones (failed rollouts counted by
    # their wrong steps alone made a behaviour every success shares look protective).
    success_rollouts = models.JSONField(default=list, blank=True)
    failure_rollouts = models.JSONField(default=list, blank=True)
    first_run = models.ForeignKey(
        ClusteringRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_run = models.ForeignKey(
        ClusteringRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-share", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="misbehaviour_unique_key")
        ]
        indexes = [models.Index(fields=["project", "is_active"], name="misbehaviour_active")]

    def __str__(self) -> str:
        return self.display_name

    def get_absolute_url(self) -> str:
        return reverse("analysis:misbehaviour_detail", args=[self.project.slug, self.pk])

    @property
    def display_name(self) -> str:
        return self.user_name or self.name or self.key

    @property
    def suggestion_is_strong(self) -> bool:
        """Whether at least ``STRONG_SUPPORT`` of its steps point to its suggested mode."""
        support = self.suggestion_support
        return self.suggested_category_id is not None and (support or 0.0) >= STRONG_SUPPORT


class WrongStepMembership(models.Model):
    """A wrong step and the misbehaviour it belongs to (none: unclustered)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(ClusteringRun, on_delete=models.CASCADE, related_name="memberships")
    step = models.ForeignKey(
        Step, on_delete=models.CASCADE, related_name="misbehaviour_memberships"
    )
    misbehaviour = models.ForeignKey(
        Misbehaviour, null=True, blank=True, on_delete=models.SET_NULL, related_name="memberships"
    )
    cluster_key = models.CharField(max_length=40, blank=True)  # raw cluster, before merges
    source = models.CharField(max_length=12)
    weight = models.FloatField(default=1.0)
    probability = models.FloatField(default=0.0)
    assigned = models.BooleanField(default=False)  # placed by incremental assignment
    # The step's behaviour signals, where its argument values came from and the error it
    # drew (analysis.core.behaviour), kept so the profiles can be rebuilt from these rows.
    signals = models.JSONField(default=list, blank=True)
    arg_sources = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    # What came just before the step (analysis.core.selection.preceding), for names.
    preceded_by = models.CharField(max_length=120, blank=True, default="")
    # Whether one agent acts in the step's rollout (analysis.core.steps.actor).
    one_agent = models.BooleanField(default=False)
    x = models.FloatField(default=0.0)
    y = models.FloatField(default=0.0)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "step"], name="membership_unique_step")
        ]
        indexes = [models.Index(fields=["project", "misbehaviour"], name="membership_misbehaviour")]

    def __str__(self) -> str:
        return f"step {self.step_id} -> {self.misbehaviour_id or 'unclustered'}"


class CachedEmbedding(models.Model):
    """A step text's vector under one embedding model, keyed by the text's sha256."""

    namespace = models.CharField(max_length=100)
    content_hash = models.CharField(max_length=64)
    dims = models.PositiveIntegerField()
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "content_hash"], name="embedding_unique_hash"
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}:{self.content_hash[:12]}"
