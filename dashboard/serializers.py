"""JSON shapes shared by the pages' polling endpoints and the API."""

from __future__ import annotations

from django.contrib.humanize.templatetags.humanize import naturaltime
from django.urls import reverse

from ingest.models import Upload, UploadStatus
from ingest.progress import progress_read
from ingest.services import UploadOutcome

# A file whose bytes an earlier upload of the project had: nothing new is stored and the
# answer is that upload, so it says so, lest the earlier file's name or error read as the
# chosen file's.
MSG_SAME_CONTENT = "{name} has the same content as {existing}, uploaded {when}"
MSG_SAME_FILE = "{name} was uploaded before, {when}"
MSG_SAME_STORED = "{same}: its rollouts are already stored, nothing new was stored."
MSG_SAME_RUNNING = "{same}, which is still being read: nothing new was stored."
MSG_SAME_FAILED = "{same}, which failed, so it is not read again: {error}"
MSG_SAME_READ_AGAIN = "{same}, which failed: that upload is read again."


def upload_json(upload: Upload, *, created: bool | None = None) -> dict[str, object]:
    """An upload as the uploads page and the API show it, with live progress while it runs."""
    done, total = upload.progress_done, upload.progress_total or upload.size
    if upload.status == "running":
        live = progress_read(upload_id=upload.pk)
        if live is not None:
            done, total = live
    percent = 100 if upload.status == "done" else (int(100 * done / total) if total else 0)
    data: dict[str, object] = {
        "id": upload.pk,
        "name": upload.original_name,
        "status": upload.status,
        "progress": {"done": done, "total": total, "percent": min(percent, 100)},
        "format": upload.detected_format or upload.requested_format,
        "agent_system": upload.agent_system,
        "error": upload.error_message,
        "trajectories": upload.trajectory_count,
        "steps": upload.step_count,
        "labels": upload.label_count,
        "repeated_ids": upload.repeated_ids,
        "members": upload.member_reports,
        "status_url": reverse(
            "dashboard:upload_status", kwargs={"slug": upload.project.slug, "pk": upload.pk}
        ),
    }
    if created is not None:
        data["created"] = created
    return data


def same_content_message(upload: Upload, *, sent_name: str, read_again: bool = False) -> str:
    """What sending ``sent_name`` did when its bytes are those of ``upload``, an earlier
    upload: already stored, still being read, failed (with why) or read again."""
    when = naturaltime(upload.created_at)
    if sent_name == upload.original_name:
        same = MSG_SAME_FILE.format(name=sent_name, when=when)
    else:
        same = MSG_SAME_CONTENT.format(name=sent_name, existing=upload.original_name, when=when)
    if read_again:
        return MSG_SAME_READ_AGAIN.format(same=same)
    if upload.status == UploadStatus.FAILED:
        return MSG_SAME_FAILED.format(same=same, error=upload.error_message)
    if upload.status == UploadStatus.DONE:
        return MSG_SAME_STORED.format(same=same)
    return MSG_SAME_RUNNING.format(same=same)


def upload_outcome_json(outcome: UploadOutcome, *, sent_name: str) -> dict[str, object]:
    """The answer to sending a file: its upload, and when the bytes are an earlier
    upload's, that upload's name (``same_content_as``) and a ``message`` saying so."""
    data = upload_json(outcome.upload, created=outcome.created)
    if outcome.same_content:
        data["same_content_as"] = outcome.upload.original_name
        data["message"] = same_content_message(
            outcome.upload, sent_name=sent_name, read_again=outcome.created
        )
    return data
