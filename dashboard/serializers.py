"""JSON shapes shared by the pages' polling endpoints and the API."""

from __future__ import annotations

from django.urls import reverse

from ingest.models import Upload
from ingest.progress import progress_read


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
