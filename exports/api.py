"""Export API, authenticated by the project token (Authorization: Bearer), like dashboard/api.py.

POST   exports/                 start an export: JSON {"kinds": [...], "filters": {...}}
GET    exports/                 the project's exports
GET    exports/<id>             status, counts and file URLs
GET    exports/<id>/files/<n>   one file (a JSONL or manifest.json)
GET    exports/<id>/export.zip  every file in one zip
"""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from exports.core.filters import KINDS, FilterError, parse_filters, parse_kinds
from exports.files import file_response, zip_response
from exports.models import ExportJob
from exports.selectors import export_job, export_jobs
from exports.services import export_create
from exports.views import job_json
from projects.models import Project
from projects.tokens import project_for_token

MSG_BAD_JSON = 'Send a JSON object: {"kinds": ["sft", ...], "filters": {...}}.'


def _token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _base(request: HttpRequest, project: Project) -> str:
    return request.build_absolute_uri(reverse("exports_api:list", kwargs={"slug": project.slug}))


def _body(request: HttpRequest) -> dict[str, Any]:
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"{}")
        except ValueError:
            raise FilterError(MSG_BAD_JSON) from None
        if not isinstance(data, dict) or not isinstance(data.get("filters", {}), dict):
            raise FilterError(MSG_BAD_JSON)
        return data
    form = request.POST
    return {"kinds": form.getlist("kinds") or form.get("kinds", ""), "filters": form.dict()}


@csrf_exempt
@require_http_methods(["GET", "POST"])
def exports_view(request: HttpRequest, slug: str) -> JsonResponse:
    project = project_for_token(_token(request), slug)
    base = _base(request, project)
    if request.method == "GET":
        jobs = export_jobs(project=project)[:100]
        return JsonResponse({"exports": [job_json(job, api_base=base) for job in jobs]})
    try:
        data = _body(request)
        kinds = parse_kinds(data.get("kinds") or list(KINDS))
        filters = parse_filters(data.get("filters") or {})
        job = export_create(project=project, kinds=kinds, filters=filters)
    except FilterError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(job_json(job, api_base=base), status=202)


def _job(request: HttpRequest, slug: str, pk: int) -> tuple[ExportJob, str]:
    project = project_for_token(_token(request), slug)
    job = export_job(project=project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    return job, _base(request, project)


@require_GET
def export_status_view(request: HttpRequest, slug: str, pk: int) -> JsonResponse:
    job, base = _job(request, slug, pk)
    data = job_json(job, api_base=base)
    data["manifest"] = job.manifest or None
    return JsonResponse(data)


@require_GET
def export_file_view(request: HttpRequest, slug: str, pk: int, name: str) -> HttpResponseBase:
    job, _ = _job(request, slug, pk)
    return file_response(job, name)


@require_GET
def export_zip_view(request: HttpRequest, slug: str, pk: int) -> HttpResponseBase:
    job, _ = _job(request, slug, pk)
    return zip_response(job)
