"""Repair-dataset exports: start one, follow its status, download its files (one JSONL per
kind and the manifest) or all of them as a zip. Same paths and answers as exports/api.py
had before the API moved to ninja.

POST takes JSON ``{"kinds": [...], "filters": {...}}`` or a form (``kinds`` comma-separated
or repeated, the filters as fields), as before, so its body is read here rather than by a
ninja parameter; the schema documents the JSON form.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from ninja import Path, Router, Status

from dashboard.api.auth import request_project
from dashboard.api.errors import ApiError, errors_documented
from dashboard.api.schemas import ID_MAX, NO_NUL, ExportIn, ExportList, ExportOut
from exports.core.filters import (
    KINDS,
    FilterError,
    parse_filters,
    parse_kinds,
    unknown_filters_refuse,
)
from exports.files import file_response, zip_response
from exports.models import ExportJob
from exports.selectors import export_job, export_jobs
from exports.services import export_create, export_retry
from exports.views import job_json
from projects.models import Project

MSG_BAD_JSON = 'Send a JSON object: {"kinds": ["sft", ...], "filters": {...}}.'
MSG_NUL = "Text may not contain NUL characters."
MSG_BAD_KEY = 'Unknown field {key!r}; send {{"kinds": [...], "filters": {{...}}}}.'
MSG_MEDIA_TYPE = (
    "Send the export as JSON (Content-Type: application/json) or as a form; "
    "got Content-Type {content_type}."
)
BODY_KEYS = ("kinds", "filters")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
MSG_NOT_FAILED = "Only a failed export can be retried; this one is {status}."
EXPORTS = "/projects/{slug:slug}/exports"
# The path before v1 ended in a slash; it is served too (outside the schema), so an old
# client's POST is not redirected into a GET that starts nothing.
EXPORTS_SLASH = EXPORTS + "/"
FILE_DOWNLOAD = {
    200: {
        "description": "The file",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}

router = Router(tags=["exports"])


def _base(request: HttpRequest, project: Project) -> str:
    return request.build_absolute_uri(f"/api/v1/projects/{project.slug}/exports/")


def _body(request: HttpRequest) -> dict[str, Any]:
    """``{"kinds": ..., "filters": ...}`` from a JSON body or a form; every name checked, so a
    misspelt one is a 400 rather than an export of everything. An empty body is every kind
    of the whole project."""
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"{}")
        except ValueError:
            raise FilterError(MSG_BAD_JSON) from None
        if not isinstance(data, dict) or not isinstance(data.get("filters") or {}, dict):
            raise FilterError(MSG_BAD_JSON)
        if "\\u0000" in json.dumps(data) or "\x00" in json.dumps(data, ensure_ascii=False):
            raise FilterError(MSG_NUL)
        for key in data:
            if key not in BODY_KEYS:
                raise ApiError(400, MSG_BAD_KEY.format(key=key), field=key)
        unknown_filters_refuse(data.get("filters") or {})
        return data
    if request.content_type in FORM_TYPES:
        form = request.POST
        if any("\x00" in value for values in form.lists() for value in values[1]):
            raise FilterError(MSG_NUL)
        unknown_filters_refuse(form, besides=("kinds",))
        filters = {k: v for k, v in form.dict().items() if k != "kinds"}
        data = {"filters": filters}
        if "kinds" in form:
            data["kinds"] = form.getlist("kinds")
        return data
    if request.body:
        raise ApiError(415, MSG_MEDIA_TYPE.format(content_type=request.content_type or "none"))
    return {}


def _job(request: HttpRequest, pk: int) -> tuple[ExportJob, str]:
    project = request_project(request)
    job = export_job(project=project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    return job, _base(request, project)


@router.get(
    EXPORTS_SLASH, response={200: ExportList}, url_name="exports_slash", include_in_schema=False
)
@router.get(
    EXPORTS,
    response={200: ExportList, **errors_documented(404)},
    url_name="export_list",
    summary="The project's exports, newest first",
)
def export_list(request: HttpRequest, slug: str) -> dict[str, Any]:
    project = request_project(request)
    base = _base(request, project)
    return {"exports": [job_json(job, api_base=base) for job in export_jobs(project=project)[:100]]}


@router.post(
    EXPORTS_SLASH, response={202: ExportOut}, url_name="exports_slash", include_in_schema=False
)
@router.post(
    EXPORTS,
    response={202: ExportOut, **errors_documented(400, 404, 415)},
    exclude_unset=True,
    url_name="export_create",
    summary="Start an export",
    openapi_extra={
        "requestBody": {
            "content": {"application/json": {"schema": ExportIn.model_json_schema()}},
            "required": False,
        }
    },
)
def export_create_view(request: HttpRequest, slug: str) -> Status[dict[str, Any]]:
    project = request_project(request)
    try:
        data = _body(request)
        kinds = parse_kinds(data["kinds"]) if "kinds" in data else KINDS
        filters = parse_filters(data.get("filters") or {})
        job = export_create(project=project, kinds=kinds, filters=filters)
    except FilterError as exc:
        field = exc.field
        # A JSON body nests the filters under "filters"; a form has them at the top.
        if field and field != "kinds" and request.content_type == "application/json":
            field = f"filters.{field}"
        raise ApiError(400, str(exc), field=field) from None
    return Status(202, job_json(job, api_base=_base(request, project)))


@router.get(
    EXPORTS + "/{pk}",
    response={200: ExportOut, **errors_documented(404)},
    url_name="export_status",
    summary="An export's status, counts and file URLs",
)
def export_status(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> dict[str, Any]:
    job, base = _job(request, pk)
    data = job_json(job, api_base=base)
    data["manifest"] = job.manifest or None
    return data


@router.post(
    EXPORTS + "/{pk}/retry",
    response={202: ExportOut, **errors_documented(404, 409)},
    exclude_unset=True,
    url_name="export_retry",
    summary="Queue a failed export again",
)
def export_retry_view(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> Status[dict[str, Any]]:
    job, base = _job(request, pk)
    if not export_retry(job=job):
        raise ApiError(409, MSG_NOT_FAILED.format(status=job.status))
    job.refresh_from_db()
    return Status(202, job_json(job, api_base=base))


@router.get(
    EXPORTS + "/{pk}/files/{name}",
    response={200: None, **errors_documented(404)},
    url_name="export_file",
    summary="One file of a finished export",
    openapi_extra={"responses": FILE_DOWNLOAD},
)
def export_file(
    request: HttpRequest,
    slug: str,
    pk: int = Path(..., ge=1, le=ID_MAX),
    name: str = Path(..., max_length=100, pattern=NO_NUL),
) -> HttpResponseBase:
    job, _ = _job(request, pk)
    return file_response(job, name)


@router.get(
    EXPORTS + "/{pk}/export.zip",
    response={200: None, **errors_documented(404)},
    url_name="export_zip",
    summary="Every file of a finished export in one zip",
    openapi_extra={"responses": FILE_DOWNLOAD},
)
def export_zip(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> HttpResponseBase:
    job, _ = _job(request, pk)
    return zip_response(job)
