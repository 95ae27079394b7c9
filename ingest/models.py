from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from ingest.core.records import LabelSource, Outcome, StepKind
from ingest.jobs import JobState, JobStatus
from projects.models import Project

UploadStatus = JobStatus


def upload_path(instance: Upload, filename: str) -> str:  # noqa: ARG001 (Django's signature)
    # Stored under the content hash: the user's file name never touches the file system.
    return f"uploads/{instance.project_id}/{instance.sha256}"


class Upload(JobState):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    original_name = models.CharField(max_length=255)
    raw_file = models.FileField(upload_to=upload_path, max_length=255)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    requested_format = models.CharField(max_length=40, blank=True)
    detected_format = models.CharField(max_length=40, blank=True)
    # The agent system the uploader named for every rollout of the file, over what the
    # file says (SWE-agent and OpenHands files name their framework, not the agent).
    agent_system = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(
        max_length=10, choices=UploadStatus.choices, default=UploadStatus.QUEUED
    )
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(default=0)
    error_message = models.TextField(blank=True)
    # Failed on what the file holds (a bad field, no known format): queueing it again would
    # fail the same way. A refused write, an internal error or a lost worker may not.
    failed_on_content = models.BooleanField(default=False)
    # The readers that failed on it (ingest.core.reader_version): the same file sent again
    # is read again once they changed.
    reader_version = models.CharField(max_length=16, blank=True, default="")
    trajectory_count = models.PositiveIntegerField(default=0)
    step_count = models.PositiveIntegerField(default=0)
    label_count = models.PositiveIntegerField(default=0)
    # Rollouts of this file whose id another rollout of the project (of an earlier file, or
    # of this one) already had: both copies are kept and both count, so the page says so.
    repeated_ids = models.PositiveIntegerField(default=0)
    # One entry per archive member (name, format, counts, error) when the file is an archive.
    member_reports = models.JSONField(default=list, blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "sha256"], name="upload_unique_content")
        ]

    def __str__(self) -> str:
        return self.original_name

    @property
    def progress_percent(self) -> int:
        if self.status == UploadStatus.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(99, int(100 * self.progress_done / self.progress_total))


OUTCOME_CHOICES = [(value, value.title()) for value in Outcome.ALL]
KIND_CHOICES = [(value, value.replace("_", " ")) for value in StepKind.ALL]
LABEL_SOURCE_CHOICES = [(value, value.replace("_", " ").capitalize()) for value in LabelSource.ALL]


class Trajectory(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trajectories")
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="trajectories")
    external_id = models.CharField(max_length=255)
    task_id = models.CharField(max_length=255, blank=True)
    task_text = models.TextField(blank=True)
    environment = models.CharField(max_length=100, blank=True)
    agent_system = models.CharField(max_length=100, blank=True)
    policy_model = models.CharField(max_length=100, blank=True)
    outcome = models.CharField(max_length=10, choices=OUTCOME_CHOICES, default=Outcome.UNKNOWN)
    reward = models.FloatField(null=True, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            # The outcome's index carries the agent system: the calibration page lists the
            # systems with failures by one seek per system (ingest.selectors).
            models.Index(
                fields=["project", "outcome", "agent_system"], name="traj_project_outcome_system"
            ),
            models.Index(fields=["project", "environment"], name="traj_project_env"),
            models.Index(fields=["project", "policy_model"], name="traj_project_model"),
            models.Index(fields=["project", "task_id"], name="traj_project_task"),
            models.Index(fields=["project", "external_id"], name="traj_project_external"),
            # The rollouts list's orders, ending in id: a page is a seek, not a sort of the
            # whole project (dashboard/rollout_paging.py, the API's cursors).
            models.Index(fields=["project", "id"], name="traj_project_id"),
            models.Index(fields=["project", "step_count", "id"], name="traj_project_steps"),
            models.Index(fields=["project", "reward", "id"], name="traj_project_reward"),
        ]

    def __str__(self) -> str:
        return self.external_id


# HOT_PATH_KEYS: a step's rollout and a received span's project are keys the ORM keeps
# (its CASCADE deletes them with their parent; nothing deletes rows in raw SQL) but the
# database does not check. They are the two largest tables and are written only by the
# bulk writers, which take the parent's id from the row they just wrote or from the
# token; PostgreSQL checked every row's key at COMMIT under a share lock on the parent,
# about a tenth of the database's time in OTLP ingestion (bench/otlp.py).
class Step(models.Model):
    # No index of its own: step_unique_index (trajectory, index) serves every lookup by
    # rollout, and a second index on the same column was maintained for every step stored.
    # No database constraint either (HOT_PATH_KEYS).
    trajectory = models.ForeignKey(
        Trajectory,
        on_delete=models.CASCADE,
        related_name="steps",
        db_index=False,
        db_constraint=False,
    )
    index = models.PositiveIntegerField()
    agent = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=40, blank=True)
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default=StepKind.MESSAGE)
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_args = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    is_error = models.BooleanField(default=False)
    is_mutating = models.BooleanField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["trajectory_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["trajectory", "index"], name="step_unique_index")
        ]
        # Partial, so that only the steps they find pay for them: the rollouts list's
        # filters by tool and by error step (ingest.selectors.steps_calling,
        # steps_failed). The queries repeat each condition word for word, which is what
        # lets SQLite use a partial index. The rollout leads, so a file's steps are
        # appended at the index's end as they are written (led by the tool name, the
        # same ingest took a fifth longer); the filter seeks it once per rollout.
        indexes = [
            models.Index(
                fields=["trajectory", "tool_name"],
                condition=Q(tool_name__gt=""),
                name="step_tool_name",
            ),
            models.Index(fields=["trajectory"], condition=Q(is_error=True), name="step_error"),
        ]

    def __str__(self) -> str:
        return f"{self.trajectory_id}#{self.index}"


class Label(models.Model):
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="labels")
    step_index = models.PositiveIntegerField()
    agent = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    source = models.CharField(max_length=32, choices=LABEL_SOURCE_CHOICES)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The API token that wrote a label through the API (its author is then nobody).
    token = models.ForeignKey(
        "projects.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["trajectory", "source"], name="label_traj_source")]

    def __str__(self) -> str:
        return f"{self.trajectory_id}#{self.step_index} ({self.source})"


# OTLP/HTTP receiver (ingest/otlp/): spans are stored as they arrive, then assembled.


class ReceivedSpan(models.Model):
    """One span accepted by the OTLP receiver, as it arrived (ingest.core.otlp_stored).

    Written inside the request, before the 200: an acknowledged span is never lost. The
    same span sent twice (an exporter's retry) is stored once.
    """

    # No index of its own: the unique (project, trace_id, span_id) index serves project
    # lookups, and a second one misleads SQLite's planner into scanning the project.
    # No database constraint either (HOT_PATH_KEYS).
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="received_spans",
        db_index=False,
        db_constraint=False,
    )
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    # The span as it arrived, in its wire encoding (ingest.core.otlp_stored): a one-span
    # resourceSpans block, protobuf or OTLP/JSON. Rows stored before it have only ``span``.
    encoding = models.CharField(max_length=10, blank=True, default="")
    payload = models.BinaryField(null=True, blank=True)
    span = models.JSONField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace_id", "span_id"], name="received_span_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.trace_id}/{self.span_id}"


class LiveTraceState(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class LiveTrace(models.Model):
    """A trace the receiver is assembling into a rollout: open until its root span has
    ended and it has been quiet for a while, then closed (late spans still update it)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="live_traces", db_index=False
    )
    trace_id = models.CharField(max_length=32)
    state = models.CharField(
        max_length=10, choices=LiveTraceState.choices, default=LiveTraceState.OPEN
    )
    # Spans arrived that the rollout does not reflect yet: the assembly task's claim.
    pending = models.BooleanField(default=True)
    # How many spans arrived since the last assembly: summed over the project's pending
    # traces, it is the receiver's backlog (ingest.otlp.receive.pending_span_count).
    pending_spans = models.PositiveIntegerField(default=0)
    root_ended = models.BooleanField(default=False)
    first_span_at = models.DateTimeField()
    last_span_at = models.DateTimeField()
    assembled_at = models.DateTimeField(null=True, blank=True)
    # How many spans the rollout was last built from: how long its next rebuild may wait
    # (ingest.core.otlp_trace.rebuild_wait).
    assembled_spans = models.PositiveIntegerField(default=0)
    # When the rebuild a long trace was told to wait for is due (its task is queued), so
    # that the requests meanwhile do not queue one each.
    rebuild_due_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    rollout = models.ForeignKey(
        Trajectory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id"], name="live_trace_unique")
        ]
        indexes = [
            models.Index(fields=["state", "last_span_at"], name="live_trace_state_quiet"),
            models.Index(fields=["pending", "last_span_at"], name="live_trace_pending"),
            # Only the pending rows, with the count in the key: the backlog is summed from
            # the index alone on every request (PostgreSQL and SQLite).
            models.Index(
                fields=["project", "pending_spans"],
                condition=models.Q(pending=True),
                name="live_trace_backlog",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} ({self.state})"


class SpanRefusals(models.Model):
    """The span requests of a project that the receiver refused for good (a body over the
    limit, undecodable, of an unknown type) or took only in part: their spans were never
    stored, and the exporter does not send them again. One row per project, counted, so
    that the uploads page can say that live traces may miss spans, and since when."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="span_refusals", primary_key=True
    )
    requests = models.PositiveIntegerField(default=0)
    # Spans refused inside requests that were otherwise taken (a partial success); the
    # spans of a request refused whole are unknown (its body was not read).
    spans = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    last_status = models.PositiveSmallIntegerField()
    last_message = models.TextField()

    def __str__(self) -> str:
        return f"{self.requests} refused span requests"
