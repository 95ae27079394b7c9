"""Uploads over the size limit are refused from their Content-Length, before the body is
read: Django's multipart parser (or the CSRF check, which reads the form) would otherwise
take the whole body, 2 GB of it, onto disk before the view could say it is too large.

Only the two upload endpoints (the upload page and ``POST /api/v1/projects/<slug>/uploads``)
are guarded here; a file that passes the limit while it is stored is refused as it is read
(``ingest.services.UploadTooLarge``), with the same 413. A body sent in chunks, without a
Content-Length, is never read by Django under WSGI (its stream is cut at the declared
length, none), so it is answered 411 at once rather than "no file was sent".
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import Resolver404, resolve

from dashboard.api.errors import error_response
from dashboard.api.main import api
from ingest.services import size_text

MSG_UPLOAD_TOO_LARGE = (
    "The upload is {size}, more than the upload limit of {limit}; nothing was stored."
)
MSG_LENGTH_REQUIRED = (
    "Send the upload with a Content-Length header: a body sent in chunks "
    "(Transfer-Encoding: chunked) is not read."
)
# The multipart form around the file (boundaries, part headers, the format and name
# fields, the CSRF token) is a few hundred bytes; a body this much over the limit cannot
# hold a file within it. One a little over is read, and refused if its file is too large.
FORM_ALLOWANCE_BYTES = 64 * 1024
UPLOAD_VIEWS = frozenset(
    {"dashboard:uploads", "api_upload_create", f"{api.urls_namespace}:upload_create"}
)


def _upload_view(request: HttpRequest) -> bool:
    try:
        return resolve(request.path_info).view_name in UPLOAD_VIEWS
    except Resolver404:
        return False


def upload_refusal(request: HttpRequest) -> tuple[int, str] | None:
    """(status, message) when the request's headers already say that the upload it
    carries cannot be taken; None when it may be read."""
    if request.method != "POST":
        return None
    declared = request.META.get("CONTENT_LENGTH", "")
    limit = settings.FAULTLINE_MAX_UPLOAD_BYTES
    if declared.isdigit():
        if int(declared) <= limit + FORM_ALLOWANCE_BYTES or not _upload_view(request):
            return None
        size = size_text(int(declared))
        return 413, MSG_UPLOAD_TOO_LARGE.format(size=size, limit=size_text(limit))
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if chunked and _upload_view(request):
        return 411, MSG_LENGTH_REQUIRED
    return None


class UploadLimitMiddleware:
    """Answers an upload refused by :func:`upload_refusal` as its endpoint answers: JSON
    under the API (``{"error": ...}``) and for the upload page's script (its
    ``{"uploads": [{"error": ...}]}``), else the upload page with the message.

    It must come before ``CsrfViewMiddleware`` reads the form (any place in MIDDLEWARE
    does: the CSRF check is a view hook, run after every middleware's call) and after
    ``MessageMiddleware``, for the page's message.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = upload_refusal(request)
        if refusal is None:
            return self.get_response(request)
        status, message = refusal
        if request.path_info.startswith(settings.FAULTLINE_API_PREFIX):
            return error_response(status, message)
        if request.headers.get("Accept", "").startswith("application/json"):
            return JsonResponse({"uploads": [{"error": message}]}, status=status)
        messages.error(request, message)
        return redirect(request.path)
