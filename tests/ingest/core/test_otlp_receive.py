"""Decoding OTLP/HTTP trace requests (protobuf and JSON) and encoding the responses."""

from __future__ import annotations

import gzip
import json

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from ingest.core.errors import TraceParseError
from ingest.core.otlp_receive import (
    CONTENT_JSON,
    CONTENT_PROTOBUF,
    MSG_BAD_GZIP,
    MSG_BAD_HEX_ID,
    MSG_BAD_PROTOBUF,
    MSG_BAD_SPAN,
    MSG_BODY_TOO_LARGE,
    MSG_NOT_AN_OBJECT,
    MSG_REJECTED_SPANS,
    MSG_SPANS_NOT_A_LIST,
    MSG_UNSUPPORTED_ENCODING,
    MSG_UNSUPPORTED_MEDIA_TYPE,
    OtlpRequestError,
    decode_request,
    decompress,
    encode_response,
    encode_status,
)
from ingest.core.otlp_stored import incoming_spans_read
from ingest.core.otlp_wire import MSG_BAD_DOUBLE, MSG_BAD_INT, MSG_BAD_VALUE
from ingest.core.spans import STATUS_ERROR
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span, protobuf_body, span_id

SPANS = [
    json_span(1, name="invoke_agent planner", end=90, attributes={"gen_ai.agent.name": "planner"}),
    json_span(
        2,
        parent=1,
        name="chat gpt-4o",
        start=10,
        end=20,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12},
        status={"code": 2, "message": "rate limited"},
    ),
]


def _error(body: bytes, content_type: str) -> OtlpRequestError:
    with pytest.raises(OtlpRequestError) as caught:
        decode_request(body, content_type)
    return caught.value


def test_it_decodes_protobuf_and_json_to_the_same_spans():
    from_json = decode_request(json_body(SPANS), CONTENT_JSON)
    from_protobuf = decode_request(protobuf_body(SPANS), CONTENT_PROTOBUF)
    as_tuples = [
        [
            (
                s.trace_id,
                s.span_id,
                s.parent_id,
                s.name,
                s.start_ns,
                s.end_ns,
                s.status,
                s.status_message,
                s.attributes,
                r,
            )
            for s, r in incoming_spans_read(decoded.spans)
        ]
        for decoded in (from_json, from_protobuf)
    ]
    assert as_tuples[0] == as_tuples[1]
    child, resource = incoming_spans_read(from_protobuf.spans)[1]
    assert (child.trace_id, child.parent_id) == (TRACE, span_id(1))
    assert child.status == STATUS_ERROR and child.attributes["gen_ai.usage.input_tokens"] == 12
    assert resource == {"service.name": "shop"}


def test_it_reads_upper_case_hex_ids_and_ignores_unknown_fields():
    raw = json_span(1, name="root", futureField={"x": 1})
    raw["traceId"] = TRACE.upper()
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}], "other": 1})
    decoded = decode_request(body.encode(), "application/json; charset=utf-8")
    ((span, _),) = incoming_spans_read(decoded.spans)
    assert span.trace_id == TRACE and span.extra["futureField"] == {"x": 1}


def test_it_refuses_garbage_protobuf_with_400():
    error = _error(b"this is not protobuf", CONTENT_PROTOBUF)
    assert (error.status, error.message) == (400, MSG_BAD_PROTOBUF)


def test_it_refuses_malformed_json_with_400():
    error = _error(b'{"resourceSpans": [', CONTENT_JSON)
    assert error.status == 400 and error.message.startswith("The body is not OTLP/JSON")
    assert _error(b"[1, 2]", CONTENT_JSON).message == MSG_NOT_AN_OBJECT


@pytest.mark.parametrize(
    "body, found",
    [
        (b'{"resourceSpans": {"a": 1}}', "an object"),
        (b'{"resourceSpans": {}}', "an object"),
        (b'{"resourceSpans": "spans"}', "a string"),
        (b'{"resourceSpans": 3}', "a number"),
    ],
)
def test_it_says_resource_spans_must_be_a_list(body, found):
    # It said "expected an object with resourceSpans" of an object that had them.
    error = _error(body, CONTENT_JSON)
    assert (error.status, error.message) == (400, MSG_SPANS_NOT_A_LIST.format(found=found))
    assert "resourceSpans must be a list, not " + found in error.message


def test_it_accepts_a_body_without_spans():
    for body in (b"{}", b'{"resourceSpans": null}', b'{"resourceSpans": []}'):
        assert decode_request(body, CONTENT_JSON).spans == []


def test_it_refuses_json_with_an_id_that_is_not_hex():
    raw = json_span(1)
    raw["spanId"] = "not-hex-at-all!!"
    error = _error(json_body([raw]), CONTENT_JSON)
    field = "resourceSpans[0].scopeSpans[0].spans[0].spanId"
    assert (error.status, error.message) == (
        400,
        MSG_BAD_HEX_ID.format(field=field, value=raw["spanId"]),
    )


def test_it_refuses_a_bad_attribute_value_with_400():
    raw = json_span(1)
    raw["attributes"] = [{"key": "k", "value": {"mysteryValue": 7}}]
    error = _error(json_body([raw]), CONTENT_JSON)
    detail = str(
        TraceParseError(
            MSG_BAD_VALUE, record="resourceSpans[0].scopeSpans[0].spans[0]", field="attributes.k"
        )
    )
    assert (error.status, error.message) == (400, MSG_BAD_SPAN.format(detail=detail))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"intValue": "notanumber"}, MSG_BAD_INT.format(value='"notanumber"')),
        ({"intValue": 7.5}, MSG_BAD_INT.format(value="7.5")),
        ({"intValue": True}, MSG_BAD_INT.format(value="true")),
        ({"doubleValue": "fast"}, MSG_BAD_DOUBLE.format(value='"fast"')),
    ],
)
def test_it_says_a_number_value_must_be_a_number_naming_the_attribute(value, message):
    # It is an AnyValue, with a number that is not one: the message says which and why.
    raw = json_span(1)
    raw["attributes"] = [{"key": "n", "value": value}]
    error = _error(json_body([raw]), CONTENT_JSON)
    detail = str(
        TraceParseError(
            message, record="resourceSpans[0].scopeSpans[0].spans[0]", field="attributes.n"
        )
    )
    assert (error.status, error.message) == (400, MSG_BAD_SPAN.format(detail=detail))


def test_it_refuses_protobuf_with_an_unknown_status_code_with_400():
    request = trace_service_pb2.ExportTraceServiceRequest()
    span = (
        request.resource_spans.add()
        .scope_spans.add()
        .spans.add(trace_id=bytes.fromhex(TRACE), span_id=b"\x01" * 8, name="x")
    )
    span.status.code = 7
    error = _error(request.SerializeToString(), CONTENT_PROTOBUF)
    assert error.status == 400 and error.message.startswith("The request holds a span")


def test_it_rejects_spans_with_ids_of_the_wrong_size_as_a_partial_success():
    short, zero = json_span(2), json_span(3)
    short["traceId"] = "abcd"
    zero["spanId"] = "0" * 16
    decoded = decode_request(json_body([json_span(1), short, zero]), CONTENT_JSON)
    assert [span.span_id for span in decoded.spans] == [span_id(1)]
    assert decoded.rejected == 2 and decoded.message == MSG_REJECTED_SPANS.format(count=2)


def test_it_rejects_protobuf_spans_without_a_trace_id():
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(span_id=b"\x01" * 8, name="x")
    decoded = decode_request(request.SerializeToString(), CONTENT_PROTOBUF)
    assert (decoded.spans, decoded.rejected) == ([], 1)


def test_it_refuses_other_content_types_with_415():
    error = _error(b"{}", "text/plain")
    assert (error.status, error.message) == (
        415,
        MSG_UNSUPPORTED_MEDIA_TYPE.format(content_type="text/plain"),
    )


def test_it_accepts_an_empty_request():
    assert decode_request(b"", CONTENT_PROTOBUF).spans == []
    assert decode_request(b"{}", CONTENT_JSON).spans == []
    assert decode_request(b'{"resourceSpans": null}', CONTENT_JSON).spans == []


def test_it_inflates_gzip_bodies():
    body = json_body(SPANS)
    assert decompress(gzip.compress(body), "gzip", limit=len(body)) == body


def test_it_refuses_a_gzip_body_that_inflates_past_the_limit_with_413():
    bomb = gzip.compress(b"\0" * 1_000_000)
    with pytest.raises(OtlpRequestError) as caught:
        decompress(bomb, "gzip", limit=1000)
    assert (caught.value.status, caught.value.message) == (
        413,
        MSG_BODY_TOO_LARGE.format(limit=1000),
    )


def test_it_refuses_a_plain_body_over_the_limit_with_413():
    with pytest.raises(OtlpRequestError) as caught:
        decompress(b"x" * 11, "", limit=10)
    assert caught.value.status == 413


def test_it_refuses_broken_gzip_with_400():
    for broken in (b"not gzip", gzip.compress(b"{}" * 100)[:-12]):
        with pytest.raises(OtlpRequestError) as caught:
            decompress(broken, "gzip", limit=10_000)
        assert (caught.value.status, caught.value.message) == (400, MSG_BAD_GZIP)


def test_it_refuses_unknown_content_encodings_with_415():
    with pytest.raises(OtlpRequestError) as caught:
        decompress(b"x", "br", limit=10)
    assert (caught.value.status, caught.value.message) == (
        415,
        MSG_UNSUPPORTED_ENCODING.format(encoding="br"),
    )


def test_it_encodes_a_partial_success_in_protobuf():
    response = trace_service_pb2.ExportTraceServiceResponse()
    response.ParseFromString(encode_response(CONTENT_PROTOBUF, rejected=2, message="two"))
    assert (response.partial_success.rejected_spans, response.partial_success.error_message) == (
        2,
        "two",
    )


def test_it_encodes_full_success_as_an_empty_json_object():
    assert json.loads(encode_response(CONTENT_JSON)) == {}


def test_it_encodes_errors_as_a_google_rpc_status():
    status = status_pb2.Status()
    status.ParseFromString(encode_status(CONTENT_PROTOBUF, status=400, message="bad"))
    assert (status.code, status.message) == (3, "bad")
    assert json.loads(encode_status("text/plain", status=401, message="who")) == {
        "code": 16,
        "message": "who",
    }
