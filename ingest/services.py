"""Writes of the ingest app: storing an upload and turning it into rollouts.

``upload_create`` runs in the request (or the CLI): it streams the file to disk once,
keyed by its content hash, and queues the ingest task on commit. ``upload_ingest`` runs
in the worker: it parses every source of the file and writes trajectories, steps and
labels in bulk inside one transaction, so a bad record leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.files import File
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from ingest.bulk import RolloutWriter
from ingest.core.errors import TraceParseError
from ingest.core.reader_version import reader_version
from ingest.jobs import Superseded, job_claim, job_update
from ingest.models import Trajectory, Upload, UploadStatus
from ingest.parsers import (
    HEAD_BYTES,
    MSG_NO_SUCH_FORMAT,
    detect_format,
    format_choices,
    format_names,
    read_records,
)
from ingest.parsers.base import ParseLimits
from ingest.parsers.sources import Source, iter_sources, may_hold_trace
from ingest.progress import progress_clear, progress_publish
from projects.models import Project

logger = logging.getLogger(__name__)

MSG_BAD_FILENAME = (
    "{name}: the file name must be a plain name, without folders, '..' or control characters."
)
MSG_EMPTY_UPLOAD = "{name}: the file is empty."
MSG_BAD_AGENT_SYSTEM = (
    "The agent system must be at most {limit} characters of text, without control "
    "characters; got {got}."
)
#: The longest agent system name a rollout can hold.
AGENT_SYSTEM_CHARS: int = Trajectory._meta.get_field("agent_system").max_length or 0
MSG_TOO_LARGE = "{name}: the file is larger than the upload limit of {limit}; nothing was stored."
MSG_INTERNAL = "{name}: internal error while reading the file ({kind}); nothing was stored."
MSG_NO_TRAJECTORIES = "The file holds no trajectories."
MSG_NOT_A_TRACE = "skipped: no reader recognises it as a trace"
MSG_DATABASE_REFUSED = (
    "{name}: the database refused a write ({error}); nothing of the file was stored. "
    "Retry once the database accepts writes again."
)

CHUNK = 1024 * 1024
PROGRESS_INTERVAL_S = 0.25


class UploadRejected(ValueError):
    """The upload is refused before anything is stored (a 4xx for the API); ``field`` is
    the input to fix (``file``, ``name``, ``format`` or ``agent_system``)."""

    def __init__(self, message: str, *, field: str = "file") -> None:
        super().__init__(message)
        self.field = field


class UploadTooLarge(UploadRejected):
    """The file passed ``FAULTLINE_MAX_UPLOAD_BYTES`` while it was read (a 413)."""


def size_text(size: int) -> str:
    """A byte count as the upload page shows sizes (Django's ``filesizeformat``), with the
    exact count (refusals name the limit).

    Example:
        >>> size_text(2 * 1024**3), size_text(1000)
        ('2.0 GB (2147483648 bytes)', '1000 bytes')
    """
    shown = filesizeformat(size).replace("\N{NO-BREAK SPACE}", " ")
    return shown if size < 1024 else f"{shown} ({size} bytes)"


@dataclass
class UploadOutcome:
    """What sending a file did: ``created`` when it is queued to be read (new, or a failed
    upload of the same content read again); ``same_content`` when ``upload`` is an earlier
    upload of the same bytes, perhaps under another name, and not a new one."""

    upload: Upload
    created: bool
    same_content: bool = False


def clean_filename(name: str) -> str:
    """The user's file name if it is a plain name, else UploadRejected.

    Example:
        >>> clean_filename("run.jsonl")
        'run.jsonl'
    """
    stripped = name.strip()
    bad = (
        not stripped
        or "/" in stripped
        or "\\" in stripped
        or stripped in {".", ".."}
        or stripped.startswith("..")
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in stripped)
        or len(stripped) > 255
    )
    if bad:
        raise UploadRejected(MSG_BAD_FILENAME.format(name=name[:255]), field="name")
    return stripped


def _spool(stream: Iterable[bytes] | IO[bytes], *, name: str) -> tuple[str, str, int]:
    """Copy the stream to a temp file, returning (path, sha256, size)."""
    limit = settings.FAULTLINE_MAX_UPLOAD_BYTES
    digest = hashlib.sha256()
    size = 0
    os.makedirs(settings.MEDIA_ROOT, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="upload-", dir=settings.MEDIA_ROOT)
    try:
        with os.fdopen(fd, "wb") as out:
            chunks: Iterable[bytes]
            if hasattr(stream, "chunks"):
                chunks = stream.chunks(CHUNK)
            elif hasattr(stream, "read"):
                chunks = iter(lambda: stream.read(CHUNK), b"")
            else:
                chunks = stream
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise UploadTooLarge(MSG_TOO_LARGE.format(name=name, limit=size_text(limit)))
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        os.unlink(path)
        raise
    return path, digest.hexdigest(), size


def upload_create(
    *,
    project: Project,
    stream: Iterable[bytes] | IO[bytes],
    original_name: str,
    user: User | AnonymousUser | None = None,
    requested_format: str = "",
    dispatch: Callable[[int], object] | None = None,
    agent_system: str = "",
) -> UploadOutcome:
    """Store a file once per project; ``dispatch(upload_id)`` runs once it is committed
    (the pipeline passes the function that queues the ingestion). ``agent_system``, when
    given, is the agent system of every rollout of the file, over what the file says.

    The same content uploaded again returns the existing upload and stores nothing (its
    rollouts keep the system they were stored with).
    """
    name = clean_filename(original_name)
    agent_system = clean_agent_system(agent_system)
    if requested_format and requested_format not in format_names():
        raise UploadRejected(
            MSG_NO_SUCH_FORMAT.format(name=requested_format, formats=format_choices()),
            field="format",
        )
    path, sha256, size = _spool(stream, name=name)
    try:
        if size == 0:
            raise UploadRejected(MSG_EMPTY_UPLOAD.format(name=name))
        existing = Upload.objects.filter(project=project, sha256=sha256).first()
        if existing is not None:
            return _existing_upload(existing, requested_format, dispatch)
        try:
            with transaction.atomic():
                upload = Upload(
                    project=project,
                    uploaded_by=user if user is not None and user.is_authenticated else None,
                    original_name=name,
                    sha256=sha256,
                    size=size,
                    requested_format=requested_format,
                    agent_system=agent_system,
                    progress_total=size,
                )
                with open(path, "rb") as handle:
                    upload.raw_file.save(sha256, File(handle), save=False)
                upload.save()
                if dispatch is not None:
                    transaction.on_commit(lambda: dispatch(upload.pk))
        except IntegrityError:
            # Another request stored the same content a moment ago.
            return UploadOutcome(
                Upload.objects.get(project=project, sha256=sha256), False, same_content=True
            )
        return UploadOutcome(upload, True)
    finally:
        if os.path.exists(path):
            os.unlink(path)


def clean_agent_system(name: str) -> str:
    """An uploader's agent system name, trimmed; :class:`UploadRejected` (field
    ``agent_system``) when it is too long or holds control characters."""
    name = name.strip()
    if len(name) > AGENT_SYSTEM_CHARS or any(unicodedata.category(char) == "Cc" for char in name):
        shown = f"{len(name)} characters" if len(name) > AGENT_SYSTEM_CHARS else repr(name)
        raise UploadRejected(
            MSG_BAD_AGENT_SYSTEM.format(limit=AGENT_SYSTEM_CHARS, got=shown),
            field="agent_system",
        )
    return name


def failed_for_good(upload: Upload) -> bool:
    """Whether the upload failed on its content under the readers running now: read again,
    it would fail the same way. One that failed otherwise (a refused write, a lost worker)
    or under readers that have changed since (ingest.core.reader_version) may go through."""
    return upload.failed_on_content and upload.reader_version == reader_version()


def _existing_upload(
    existing: Upload, requested_format: str, dispatch: Callable[[int], object] | None
) -> UploadOutcome:
    """The same content again: the stored upload, unless it failed and is now sent with
    another format named, which is the fix for a file read as the wrong format, or failed
    on its content under readers that have changed since (a release that reads it now):
    then it is read again (queued, as a new upload would be)."""
    if existing.status != UploadStatus.FAILED:
        return UploadOutcome(existing, False, same_content=True)
    readers_changed = existing.failed_on_content and not failed_for_good(existing)
    if requested_format == existing.requested_format and not readers_changed:
        return UploadOutcome(existing, False, same_content=True)
    with transaction.atomic():
        Upload.objects.filter(pk=existing.pk).update(requested_format=requested_format)
        if not upload_retry(upload=existing):
            return UploadOutcome(Upload.objects.get(pk=existing.pk), False, same_content=True)
        if dispatch is not None:
            upload_id = existing.pk
            transaction.on_commit(lambda: dispatch(upload_id))
    return UploadOutcome(Upload.objects.get(pk=existing.pk), True, same_content=True)


def _limits() -> ParseLimits:
    return ParseLimits(
        max_document_bytes=settings.FAULTLINE_MAX_DOCUMENT_BYTES,
        max_archive_bytes=settings.FAULTLINE_MAX_ARCHIVE_BYTES,
    )


ProgressCallback = Callable[[int, int], None]


def _member_progress(stream: IO[bytes], source: Source) -> int:
    """Stored bytes of this member read so far (scaled for compressed members)."""
    try:
        position = stream.tell()
    except (OSError, ValueError):
        return 0
    if source.expanded_bytes:
        return min(source.stored_bytes, position * source.stored_bytes // source.expanded_bytes)
    return 0


def _report(name: str, fmt: str, counts: tuple[int, int]) -> dict[str, object]:
    return {"name": name, "format": fmt, "trajectories": counts[0], "steps": counts[1]}


def _member_format(upload: Upload, source: Source, head: bytes) -> str | None:
    """The format to read a source in; None for an archive member to skip: one no reader
    recognises (a README or a run's ``config.json`` zipped with the runs refused the whole
    upload, while the CLI walking the same folder skipped them), unless the upload names
    a format and the member's name is a trace file's. A member a reader recognises but
    cannot read still fails the upload, naming it."""
    if not source.member:
        return upload.requested_format or detect_format(head, source.name)
    try:
        detected = detect_format(head, source.name)
    except TraceParseError:
        if upload.requested_format and may_hold_trace(source.name):
            return upload.requested_format
        return None
    return upload.requested_format or detected


def _parse_into(
    writer: RolloutWriter,
    upload: Upload,
    *,
    on_progress: ProgressCallback,
) -> list[dict[str, object]]:
    """Parse every source of the stored file into the writer; return per-member reports."""
    limits = _limits()
    path = upload.raw_file.path
    reports: list[dict[str, object]] = []
    done_before = 0
    for source in iter_sources(path, filename=upload.original_name, limits=limits):
        before = writer.seen
        try:
            with source.open() as stream:
                head = stream.read(HEAD_BYTES)
            fmt = _member_format(upload, source, head)
            if fmt is None:
                reports.append({**_report(source.name, "", (0, 0)), "skipped": MSG_NOT_A_TRACE})
                done_before += source.stored_bytes
                continue
            with source.open() as stream:
                for record in read_records(fmt, stream, filename=source.name, limits=limits):
                    if upload.agent_system:
                        record.agent_system = upload.agent_system
                    writer.add(record)
                    on_progress(done_before + _member_progress(stream, source), upload.size)
        except TraceParseError as exc:
            # Name the archive member, not just the archive, in the message.
            raise exc if exc.file else exc.with_file(source.name) from None
        done_before += source.stored_bytes
        after = writer.seen
        reports.append(_report(source.name, fmt, (after[0] - before[0], after[1] - before[1])))
    writer.flush()
    return reports


def upload_ingest(*, upload_id: int, on_progress: ProgressCallback | None = None) -> Upload:
    """Parse a stored upload into rollouts; running it after it finished does nothing.

    Every run claims the upload under a new attempt (a redelivered task whose worker was
    lost takes over at once); the rows are written in one transaction that commits only
    while this run's attempt is still the latest, so two runs never both store the file.
    What follows (attribution, clustering) is the pipeline's business, not this one's.
    """
    upload = job_claim(Upload, upload_id)
    if upload is None:
        return Upload.objects.get(pk=upload_id)

    last_published = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last_published[0] >= PROGRESS_INTERVAL_S:
            last_published[0] = now
            progress_publish(upload_id=upload.pk, done=done, total=total)
        if on_progress is not None:
            on_progress(done, total)

    writer = RolloutWriter(
        project_id=upload.project_id,
        upload_id=upload.pk,
        batch_steps=settings.FAULTLINE_INGEST_BATCH_STEPS,
    )
    error = ""
    on_content = False
    reports: list[dict[str, object]] = []
    try:
        with transaction.atomic():
            # A run cut short (worker lost) left nothing behind; this clears what a run of
            # another era might have committed, so the file is stored exactly once.
            Trajectory.objects.filter(upload=upload).delete()
            reports = _parse_into(writer, upload, on_progress=report)
            if writer.trajectories == 0:
                raise TraceParseError(MSG_NO_TRAJECTORIES, file=upload.original_name)
            upload.repeated_ids = repeated_ids(upload)
            # Commit only as the latest attempt; the row lock orders a concurrent claim.
            latest = (
                Upload.objects.select_for_update().filter(pk=upload.pk, attempt=upload.attempt)
            ).exists()
            if not latest:
                raise Superseded(f"upload {upload.pk} attempt {upload.attempt}")
    except Superseded:
        logger.info("upload %s attempt %s was superseded", upload.pk, upload.attempt)
        return Upload.objects.get(pk=upload.pk)
    except TraceParseError as exc:
        error = str(exc if exc.file else exc.with_file(upload.original_name))
        on_content = True
    except (DatabaseError, connection.Database.Error) as exc:  # type: ignore[attr-defined]
        # The driver's own class too: the PostgreSQL COPY of ingest.bulk runs on psycopg's
        # cursor, outside Django's error wrapping, so a refused row raises psycopg.Error.
        logger.exception("the database refused a write of upload %s", upload.pk)
        error = MSG_DATABASE_REFUSED.format(name=upload.original_name, error=str(exc)[:300])
    except Exception as exc:  # the worker must stay up for the next file
        logger.exception("ingest of upload %s failed", upload.pk)
        error = MSG_INTERNAL.format(name=upload.original_name, kind=type(exc).__name__)

    upload.finished_at = timezone.now()
    upload.failed_on_content = on_content
    upload.reader_version = reader_version() if on_content else ""
    if error:
        upload.status = UploadStatus.FAILED
        upload.error_message = error
        upload.trajectory_count = upload.step_count = upload.label_count = 0
        upload.repeated_ids = 0
    else:
        upload.status = UploadStatus.DONE
        formats = {str(r["format"]) for r in reports if r["format"]}
        upload.detected_format = ",".join(sorted(formats))[:40]
        upload.trajectory_count = writer.trajectories
        upload.step_count = writer.steps
        upload.label_count = writer.labels
        upload.progress_done = upload.size
    upload.member_reports = reports if len(reports) > 1 else []
    fields = [
        "status", "finished_at", "error_message", "detected_format", "trajectory_count",
        "step_count", "label_count", "progress_done", "member_reports", "failed_on_content",
        "reader_version", "repeated_ids",
    ]  # fmt: skip
    if not job_update(upload, **{name: getattr(upload, name) for name in fields}):
        logger.info("upload %s attempt %s was superseded at the end", upload.pk, upload.attempt)
    progress_clear(upload_id=upload.pk)
    return Upload.objects.get(pk=upload.pk)


def repeated_ids(upload: Upload) -> int:
    """How many of the upload's rollouts have an id that another rollout of the project
    has too (one index lookup each, on ``traj_project_external``)."""
    twins = Trajectory.objects.filter(
        project_id=upload.project_id, external_id=OuterRef("external_id")
    ).exclude(pk=OuterRef("pk"))
    return Trajectory.objects.filter(upload=upload).filter(Exists(twins)).count()


def upload_retry(*, upload: Upload) -> bool:
    """Queue a failed upload again (the caller dispatches it on commit); False when it
    had not failed."""
    return bool(
        Upload.objects.filter(pk=upload.pk, status=UploadStatus.FAILED).update(
            status=UploadStatus.QUEUED,
            error_message="",
            failed_on_content=False,
            reader_version="",
            reaped=0,
            dispatched_at=None,
            progress_done=0,
            started_at=None,
            finished_at=None,
        )
    )
