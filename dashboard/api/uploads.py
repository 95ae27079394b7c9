"""Uploads: a trace file sent as multipart, its status while it is parsed, a retry after a
failure. Same paths and answers as before the API moved to ninja."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import File, Form, Path, Router, Status, UploadedFile

from dashboard.api.auth import request_project
from dashboard.api.errors import ApiError, errors_documented, no_nul
from dashboard.api.schemas import ID_MAX, UploadOut
from dashboard.serializers import upload_json, upload_outcome_json
from ingest.models import Upload
from ingest.services import UploadRejected, UploadTooLarge
from pipeline.uploads import UploadNotRetryable, upload_retry_submit, upload_submit
from projects.models import Project

MSG_NO_FILE = "Send the trace log as a multipart form field named 'file'."
MSG_NO_FILE_READ = (
    "No field named 'file' could be read from the multipart body: the field is missing, "
    "or the body is cut short or malformed (its boundary, its Content-Length)."
)
MSG_NO_UPLOAD = "No such upload."
MSG_NOT_FAILED = "Only a failed upload can be retried; this one is {status}."

router = Router(tags=["uploads"])


def _status_url(request: HttpRequest, project: Project, upload: Upload) -> str:
    return request.build_absolute_uri(f"/api/v1/projects/{project.slug}/uploads/{upload.pk}")


def _upload(project: Project, pk: int) -> Upload:
    upload = Upload.objects.filter(project=project, pk=pk).select_related("project").first()
    if upload is None:
        raise Http404(MSG_NO_UPLOAD)
    return upload


@router.post(
    "/projects/{slug:slug}/uploads",
    response={200: UploadOut, 202: UploadOut, **errors_documented(400, 404, 411, 413)},
    exclude_unset=True,
    url_name="upload_create",
    summary="Upload a trace file",
)
def upload_create(
    request: HttpRequest,
    slug: str,
    file: File[UploadedFile | None] = None,
    name: Form[str] = "",
    format: Form[str] = "",
    agent_system: Form[str] = "",
) -> Status[dict[str, Any]]:
    """Store the file (once per content: the same file again answers 200 with the upload
    it already made) and queue its ingestion: 202 with a status URL to poll.
    ``agent_system`` names the agent system of every rollout of the file, over what the
    file says (SWE-agent and OpenHands files name their framework). A file over
    the upload limit is a 413, answered from the Content-Length before the body is read
    (dashboard.upload_limit); a body without a Content-Length (chunked) is a 411."""
    project = request_project(request)
    if file is None:
        multipart = request.content_type == "multipart/form-data"
        raise ApiError(400, MSG_NO_FILE_READ if multipart else MSG_NO_FILE, field="file")
    sent_name = no_nul(name, "name") or file.name or ""
    try:
        outcome = upload_submit(
            project=project,
            stream=file,
            original_name=sent_name,
            requested_format=no_nul(format, "format"),
            agent_system=no_nul(agent_system, "agent_system"),
        )
    except UploadTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    except UploadRejected as exc:
        raise ApiError(400, str(exc), field=exc.field) from None
    data = upload_outcome_json(outcome, sent_name=sent_name)
    data["status_url"] = _status_url(request, project, outcome.upload)
    return Status(202 if outcome.created else 200, data)


@router.get(
    "/projects/{slug:slug}/uploads/{pk}",
    response={200: UploadOut, **errors_documented(404)},
    exclude_unset=True,
    url_name="upload_status",
    summary="An upload's status and progress",
)
def upload_status(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> dict[str, Any]:
    project = request_project(request)
    upload = _upload(project, pk)
    data = upload_json(upload)
    data["status_url"] = _status_url(request, project, upload)
    return data


@router.post(
    "/projects/{slug:slug}/uploads/{pk}/retry",
    response={202: UploadOut, **errors_documented(404, 409)},
    exclude_unset=True,
    url_name="upload_retry",
    summary="Queue a failed upload again",
)
def upload_retry(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> Status[dict[str, Any]]:
    project = request_project(request)
    upload = _upload(project, pk)
    try:
        retried = upload_retry_submit(upload=upload)
    except UploadNotRetryable as exc:
        raise ApiError(409, str(exc)) from None
    if not retried:
        raise ApiError(409, MSG_NOT_FAILED.format(status=upload.status))
    upload.refresh_from_db()
    data = upload_json(upload)
    data["status_url"] = _status_url(request, project, upload)
    return Status(202, data)
