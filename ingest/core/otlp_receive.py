"""OTLP/HTTP trace requests and responses, per the OTLP specification (no web framework).

A request body is an ``ExportTraceServiceRequest``: protobuf (``application/x-protobuf``,
decoded with the ``opentelemetry-proto`` classes) or OTLP/JSON (``application/json``:
lowerCamelCase names, hex ids, integer enums, unknown fields ignored), possibly gzipped.
A request is checked, not decoded: each accepted span is kept as it arrived
(ingest.core.otlp_stored), to be read by the one OTLP reader when its trace is assembled.
OTLP/JSON is read once in the request all the same, for its errors: a malformed value is
a 400 naming its field. Protobuf is typed, so only its ids and status codes are checked.

What is refused, and how:
- a body that cannot be decoded at all (corrupt protobuf or gzip, malformed JSON, an id
  that is not hex, a bad attribute value): :class:`OtlpRequestError` with status 400 and
  nothing of the request is kept; a body over the limit: 413;
- a span that decodes but cannot be stored (a trace id that is not 16 bytes or a span id
  that is not 8, missing or all zero): left out and counted in ``rejected``; the response
  reports it as ``partial_success`` (exporters do not retry those).

The response is an ``ExportTraceServiceResponse`` in the request's content type; errors
carry a ``google.rpc.Status`` (:func:`encode_status`).

Example:
    >>> body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat"}, {"traceId": "", "spanId": "00f067aa0ba902b7"}]}]}]}'
    >>> decoded = decode_request(body, CONTENT_JSON)
    >>> [span.span_id for span in decoded.spans], decoded.rejected
    (['b7ad6b7169203331'], 1)
    >>> encode_response(CONTENT_JSON, rejected=1, message=decoded.message)
    b'{"partialSuccess": {"rejectedSpans": "1", "errorMessage": "1 span(s) refused: a trace id must be 16 bytes and a span id 8 bytes, not all zero."}}'
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import loads
from ingest.core.otlp_stored import (
    IncomingSpan,
    json_request_spans,
    protobuf_request_spans,
)
from ingest.core.otlp_wire import document_spans, is_hex

CONTENT_PROTOBUF = "application/x-protobuf"
CONTENT_JSON = "application/json"
CONTENT_TYPES = (CONTENT_PROTOBUF, CONTENT_JSON)

MSG_BAD_PROTOBUF = "The body is not an OTLP ExportTraceServiceRequest in protobuf."
MSG_BAD_JSON = "The body is not OTLP/JSON: {detail}"
MSG_NOT_AN_OBJECT = "The body is not OTLP/JSON: expected an object with resourceSpans."
MSG_SPANS_NOT_A_LIST = "The body is not OTLP/JSON: resourceSpans must be a list, not {found}."
MSG_BAD_SPAN = "The request holds a span that cannot be read: {detail}"
MSG_BAD_HEX_ID = "The body is not OTLP/JSON: {field} must be a hex string (got {value!r})."
MSG_BAD_GZIP = "The body is not valid gzip data."
MSG_BODY_TOO_LARGE = "The request body is larger than the limit of {limit} bytes."
MSG_UNSUPPORTED_MEDIA_TYPE = (
    "Unsupported content type {content_type!r}: send application/x-protobuf or application/json."
)
MSG_UNSUPPORTED_ENCODING = "Unsupported content encoding {encoding!r}: send gzip or identity."
MSG_REJECTED_SPANS = (
    "{count} span(s) refused: a trace id must be 16 bytes and a span id 8 bytes, not all zero."
)

# google.rpc.Code values for the Status body of an error response.
RPC_CODES = {400: 3, 401: 16, 413: 8, 415: 3, 429: 8, 503: 14}
ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


class OtlpRequestError(ValueError):
    """The whole request is refused with this HTTP status; nothing of it is kept."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class DecodedRequest:
    """The spans of a request, ready to store, and how many were refused."""

    spans: list[IncomingSpan] = field(default_factory=list)
    rejected: int = 0

    @property
    def message(self) -> str:
        return MSG_REJECTED_SPANS.format(count=self.rejected) if self.rejected else ""


def media_type(content_type: str) -> str:
    """The media type of a Content-Type header, without parameters, lower case.

    >>> media_type("application/json; charset=utf-8")
    'application/json'
    """
    return content_type.split(";", 1)[0].strip().lower()


def require_media_type(content_type: str) -> str:
    """The request's media type if the receiver speaks it, else a 415."""
    kind = media_type(content_type)
    if kind not in CONTENT_TYPES:
        raise OtlpRequestError(415, MSG_UNSUPPORTED_MEDIA_TYPE.format(content_type=kind[:100]))
    return kind


def decompress(body: bytes, encoding: str, *, limit: int) -> bytes:
    """The body after its Content-Encoding (gzip or none), never more than ``limit`` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(body) > limit:
            raise OtlpRequestError(413, MSG_BODY_TOO_LARGE.format(limit=limit))
        return body
    if encoding != "gzip":
        raise OtlpRequestError(415, MSG_UNSUPPORTED_ENCODING.format(encoding=encoding[:50]))
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        # max_length bounds the memory a small "zip bomb" can claim.
        data = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise OtlpRequestError(400, MSG_BAD_GZIP) from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise OtlpRequestError(413, MSG_BODY_TOO_LARGE.format(limit=limit))
    if not inflater.eof:
        raise OtlpRequestError(400, MSG_BAD_GZIP)
    return data


def _protobuf_request(body: bytes) -> DecodedRequest:
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError):
        raise OtlpRequestError(400, MSG_BAD_PROTOBUF) from None
    try:
        spans, rejected = protobuf_request_spans(request)
    except TraceParseError as exc:
        raise OtlpRequestError(400, MSG_BAD_SPAN.format(detail=str(exc))) from None
    return DecodedRequest(spans=spans, rejected=rejected)


def _json_document(body: bytes) -> dict[str, Any]:
    try:
        document = loads(body, record="body")
    except TraceParseError as exc:
        raise OtlpRequestError(400, MSG_BAD_JSON.format(detail=exc.message)) from None
    if not isinstance(document, dict):
        raise OtlpRequestError(400, MSG_NOT_AN_OBJECT)
    blocks = document.get("resourceSpans")
    if blocks is not None and not isinstance(blocks, list):
        raise OtlpRequestError(400, MSG_SPANS_NOT_A_LIST.format(found=_json_kind(blocks)))
    return document


def _json_kind(value: Any) -> str:
    """What a JSON value is, in the words an error message uses.

    >>> _json_kind({"a": 1}), _json_kind("x"), _json_kind(True), _json_kind(2.5)
    ('an object', 'a string', 'true/false', 'a number')
    """
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "null"


def _ids_storable(span: Any, where: str) -> bool:
    """Whether the span's ids can be stored; an id that is not hex refuses the request."""
    if not isinstance(span, dict):
        return True  # the wire reader reports it
    for key, size in ID_BYTES.items():
        value = span.get(key, "")
        if not isinstance(value, str) or not is_hex(value):
            raise OtlpRequestError(400, MSG_BAD_HEX_ID.format(field=f"{where}.{key}", value=value))
        if key == "parentSpanId" and value == "":
            continue
        if len(value) != 2 * size or not value.strip("0"):
            return False
    return True


def _storable_blocks(document: dict[str, Any]) -> tuple[list[Any], int]:
    """The resourceSpans blocks with unstorable spans left out, and how many those were."""
    rejected = 0
    blocks = []
    for b_index, block in enumerate(document.get("resourceSpans") or []):
        if not isinstance(block, dict) or not isinstance(block.get("scopeSpans", []), list):
            blocks.append(block)
            continue
        scopes = []
        for s_index, scope in enumerate(block.get("scopeSpans") or []):
            if not isinstance(scope, dict) or not isinstance(scope.get("spans", []), list):
                scopes.append(scope)
                continue
            where = f"resourceSpans[{b_index}].scopeSpans[{s_index}].spans"
            kept = [
                span
                for k_index, span in enumerate(scope.get("spans") or [])
                if _ids_storable(span, f"{where}[{k_index}]")
            ]
            rejected += len(scope.get("spans") or []) - len(kept)
            scopes.append({**scope, "spans": kept})
        blocks.append({**block, "scopeSpans": scopes})
    return blocks, rejected


def _json_request(body: bytes) -> DecodedRequest:
    blocks, rejected = _storable_blocks(_json_document(body))
    try:
        spans = [span for span, _ in document_spans(blocks)]
    except TraceParseError as exc:
        raise OtlpRequestError(400, MSG_BAD_SPAN.format(detail=str(exc))) from None
    return DecodedRequest(spans=json_request_spans(blocks, spans), rejected=rejected)


def decode_request(body: bytes, content_type: str) -> DecodedRequest:
    """The spans of an (already decompressed) ExportTraceServiceRequest body."""
    kind = require_media_type(content_type)
    return _protobuf_request(body) if kind == CONTENT_PROTOBUF else _json_request(body)


def encode_response(content_type: str, *, rejected: int = 0, message: str = "") -> bytes:
    """An ExportTraceServiceResponse (with partial_success when spans were refused)."""
    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if media_type(content_type) == CONTENT_PROTOBUF:
        return response.SerializeToString()
    return json.dumps(json_format.MessageToDict(response)).encode()


def encode_status(content_type: str, *, status: int, message: str) -> bytes:
    """The google.rpc.Status body of an error response, in the request's content type
    (JSON when the request's type is not one the receiver speaks)."""
    rpc_status = status_pb2.Status(code=RPC_CODES.get(status, 2), message=message)
    if media_type(content_type) == CONTENT_PROTOBUF:
        return rpc_status.SerializeToString()
    return json.dumps(json_format.MessageToDict(rpc_status)).encode()
