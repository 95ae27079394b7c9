"""``POST /v1/traces``: the OTLP/HTTP trace endpoint (also at ``/api/v1/otlp/v1/traces``).

The project is the one whose API token the ``Authorization: Bearer <token>`` header
carries. Statuses, as the OTLP/HTTP specification expects them:
200 with an ``ExportTraceServiceResponse`` (``partial_success`` for refused spans);
400 undecodable body; 401 no or unknown token; 405 not a POST; 413 body over
``FAULTLINE_OTLP_MAX_BODY_BYTES`` (as sent or inflated); 415 content type other than
``application/x-protobuf`` / ``application/json`` or an unknown Content-Encoding;
429 with ``Retry-After`` when the project's backlog (spans stored, not yet assembled) is
at ``FAULTLINE_OTLP_MAX_PENDING_SPANS``, or (``Retry-After`` the cool-off) when the
address sent too many wrong tokens, counted with the rest of the API's; 503 with ``Retry-After`` when the span store
cannot take the request (down, locked past ``FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS``, not
migrated). Exporters retry only 429/502/503/504, so neither loses a span where a 500
would. Every answer uses the request's content type (JSON when that is not one of the
two).
"""

from __future__ import annotations

import logging

from django.conf import settings
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
from ingest.otlp.receive import receive_backlog_full, spans_receive
from ingest.otlp.refusals import LOST_STATUSES, span_refusal_record
from pipeline.live import live_traces_assemble_dispatch
from projects.models import Project
from projects.security import (
    MSG_TOKEN_THROTTLED,
    own_token_throttle,
    token_refusal_count,
    token_throttled,
)
from projects.tokens import TokenRefused, project_for_bearer_token

logger = logging.getLogger(__name__)

MSG_NO_TOKEN = "Send the project's API token as 'Authorization: Bearer <token>'."
MSG_BAD_TOKEN = "The API token is not valid for any project."
MSG_POST_ONLY = "Send spans with POST."
MSG_STORE_UNAVAILABLE = "The span store is unavailable; retry later."
MSG_BACKLOG_FULL = (
    "Too many spans of this project wait to be assembled ({limit} or more); retry later."
)
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


def _retry_later(reply_type: str, status: int, message: str, seconds: int) -> HttpResponse:
    response = _error(reply_type, status, message)
    response["Retry-After"] = str(seconds)
    return response


@csrf_exempt
@own_token_throttle
def otlp_traces_view(request: HttpRequest) -> HttpResponse:
    requested = media_type(request.headers.get("Content-Type", ""))
    reply_type = requested if requested in CONTENT_TYPES else CONTENT_JSON
    if request.method != "POST":
        response = _error(reply_type, 405, MSG_POST_ONLY)
        response["Allow"] = "POST"
        return response
    config = ReceiverConfig.from_env()
    # The API's throttle on wrong tokens, on both paths, answered in OTLP's encoding.
    if token_throttled(request):
        return _retry_later(
            reply_type, 429, MSG_TOKEN_THROTTLED, settings.FAULTLINE_TOKEN_COOLOFF_SECONDS
        )
    project: Project | None = None
    try:
        token = _bearer_token(request)
        project = _project(token)
        if project is None:
            if token:
                token_refusal_count(request)
            response = _error(reply_type, 401, MSG_BAD_TOKEN if token else MSG_NO_TOKEN)
            response["WWW-Authenticate"] = 'Bearer realm="faultline"'
            return response
        kind = require_media_type(requested)
        raw = _read_body(request, config.max_body_bytes)
        # Before the decoding, which is most of a request's cost: refusing is cheap.
        if receive_backlog_full(project_id=project.pk, max_pending_spans=config.max_pending_spans):
            logger.warning("OTLP request for project %s refused: backlog full", project.pk)
            message = MSG_BACKLOG_FULL.format(limit=config.max_pending_spans)
            return _retry_later(reply_type, 429, message, config.retry_after_seconds)
        body = decompress(
            raw, request.headers.get("Content-Encoding", ""), limit=config.max_body_bytes
        )
        decoded = decode_request(body, kind)
        spans_receive(
            project=project,
            spans=decoded.spans,
            dispatch=live_traces_assemble_dispatch,
            lock_timeout_seconds=config.lock_timeout_seconds,
        )
    except OtlpRequestError as exc:
        if project is not None and exc.status in LOST_STATUSES:
            span_refusal_record(project_id=project.pk, status=exc.status, message=exc.message)
        return _error(reply_type, exc.status, exc.message)
    except (OperationalError, InterfaceError, ProgrammingError):
        # Retried by the exporter, unlike a 500 (which it drops): a database that is down,
        # locked or not migrated yet loses nothing.
        logger.exception("OTLP spans not stored: the database is unavailable")
        return _retry_later(reply_type, 503, MSG_STORE_UNAVAILABLE, config.retry_after_seconds)
    if decoded.rejected:
        span_refusal_record(
            project_id=project.pk, status=200, message=decoded.message, spans=decoded.rejected
        )
    return _answer(
        reply_type, 200, encode_response(kind, rejected=decoded.rejected, message=decoded.message)
    )
