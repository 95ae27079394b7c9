"""``POST /v1/traces``: the OTLP/HTTP trace endpoint (also at ``/api/v1/otlp/v1/traces``).

The project is the one whose API token the ``Authorization: Bearer <token>`` header
carries. Statuses, as the OTLP/HTTP specification expects them:
200 with an ``ExportTraceServiceResponse`` (``partial_success`` for refused spans);
400 undecodable body; 401 no or unknown token; 405 not a POST; 413 body over
``FAULTLINE_OTLP_MAX_BODY_BYTES`` (as sent or inflated); 415 content type other than
``application/x-protobuf`` / ``application/json`` or an unknown Content-Encoding;
503 with ``Retry-After`` when the span store cannot take the request (exporters retry
only 429/502/503/504). Every answer uses the request's content type (JSON when that is
not one of the two).
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, ProgrammingError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from ingest.core.otlp_receive import (
    CONTENT_JSON,
    CONTENT_TYPES,
    MSG_BODY_TOO_LARGE,
    OtlpRequestError,
    decode_request,
    decompress,
    encode_response,
    encode_status,
    media_type,
    require_media_type,
)
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.services import spans_receive
from pipeline.live import live_traces_assemble_dispatch
from projects.models import Project
from projects.tokens import TokenRefused, project_for_bearer_token

logger = logging.getLogger(__name__)

MSG_NO_TOKEN = "Send the project's API token as 'Authorization: Bearer <token>'."
MSG_BAD_TOKEN = "The API token is not valid for any project."
MSG_POST_ONLY = "Send spans with POST."
MSG_STORE_UNAVAILABLE = "The span store is unavailable; retry later."
READ_CHUNK = 256 * 1024


def _project(token: str) -> Project | None:
    try:
        return project_for_bearer_token(token)
    except TokenRefused:
        return None


def _bearer_token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _read_body(request: HttpRequest, limit: int) -> bytes:
    """The raw body, refused (413) as soon as it passes the limit: never held whole."""
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise OtlpRequestError(413, MSG_BODY_TOO_LARGE.format(limit=limit))
    chunks, size = [], 0
    while chunk := request.read(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise OtlpRequestError(413, MSG_BODY_TOO_LARGE.format(limit=limit))
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(reply_type: str, status: int, body: bytes) -> HttpResponse:
    return HttpResponse(body, status=status, content_type=reply_type)


def _error(reply_type: str, status: int, message: str) -> HttpResponse:
    return _answer(reply_type, status, encode_status(reply_type, status=status, message=message))


@csrf_exempt
def otlp_traces_view(request: HttpRequest) -> HttpResponse:
    requested = media_type(request.headers.get("Content-Type", ""))
    reply_type = requested if requested in CONTENT_TYPES else CONTENT_JSON
    if request.method != "POST":
        response = _error(reply_type, 405, MSG_POST_ONLY)
        response["Allow"] = "POST"
        return response
    config = ReceiverConfig.from_env()
    try:
        token = _bearer_token(request)
        project = _project(token)
        if project is None:
            response = _error(reply_type, 401, MSG_BAD_TOKEN if token else MSG_NO_TOKEN)
            response["WWW-Authenticate"] = 'Bearer realm="faultline"'
            return response
        kind = require_media_type(requested)
        raw = _read_body(request, config.max_body_bytes)
        body = decompress(
            raw, request.headers.get("Content-Encoding", ""), limit=config.max_body_bytes
        )
        decoded = decode_request(body, kind)
        spans_receive(project=project, spans=decoded.spans, dispatch=live_traces_assemble_dispatch)
    except OtlpRequestError as exc:
        return _error(reply_type, exc.status, exc.message)
    except (OperationalError, InterfaceError, ProgrammingError):
        # Retried by the exporter, unlike a 500 (which it drops): a database that is down,
        # locked or not migrated yet loses nothing.
        logger.exception("OTLP spans not stored: the database is unavailable")
        response = _error(reply_type, 503, MSG_STORE_UNAVAILABLE)
        response["Retry-After"] = str(config.retry_after_seconds)
        return response
    if decoded.rejected:
        logger.warning("OTLP request for project %s: %s", project.pk, decoded.message)
    return _answer(
        reply_type, 200, encode_response(kind, rejected=decoded.rejected, message=decoded.message)
    )
