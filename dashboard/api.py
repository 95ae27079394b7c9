"""The REST API: uploads authenticated by a per-project token (Authorization: Bearer)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from analysis.rollout_filters import RolloutFilters, rollouts_filtered
from dashboard.rollout_download import native_download
from dashboard.serializers import upload_json
from ingest.models import Upload
from ingest.services import UploadRejected
from pipeline.uploads import upload_submit
from projects.tokens import project_for_token

MSG_NO_FILE = "Send the trace log as a multipart form field named 'file'."


def _token(request: HttpRequest) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@csrf_exempt
@require_POST
def upload_create_view(request: HttpRequest, slug: str) -> JsonResponse:
    project = project_for_token(_token(request), slug)
    upload_file = request.FILES.get("file")
    if upload_file is None:
        return JsonResponse({"error": MSG_NO_FILE}, status=400)
    try:
        outcome = upload_submit(
            project=project,
            stream=upload_file,
            original_name=request.POST.get("name") or upload_file.name or "",
            requested_format=request.POST.get("format", ""),
        )
    except UploadRejected as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    data = upload_json(outcome.upload, created=outcome.created)
    data["status_url"] = request.build_absolute_uri(
        f"/api/v1/projects/{project.slug}/uploads/{outcome.upload.pk}"
    )
    return JsonResponse(data, status=202 if outcome.created else 200)


@require_GET
def upload_status_view(request: HttpRequest, slug: str, pk: int) -> JsonResponse:
    project = project_for_token(_token(request), slug)
    upload = Upload.objects.filter(project=project, pk=pk).select_related("project").first()
    if upload is None:
        raise Http404("No such upload.")
    data = upload_json(upload)
    data["status_url"] = request.build_absolute_uri()
    return JsonResponse(data)


@require_GET
def rollouts_export_view(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """All rollouts of the project (or those the query filters select) as native JSONL."""
    project = project_for_token(_token(request), slug)
    filters = RolloutFilters.from_query(request.GET.dict())
    return native_download(
        rollouts_filtered(project=project, filters=filters), filename=f"{project.slug}-rollouts"
    )
