"""The fast protobuf-to-OTLP/JSON conversion gives exactly what json_format.MessageToDict
(plus ids from base64 to hex, as the receiver did before) gives, on every kind of field."""

from __future__ import annotations

import base64
import random

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from ingest.core.otlp_protobuf import request_as_json

ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _reference(request) -> dict:
    """The receiver's conversion before this module: MessageToDict, then ids to hex."""
    document = json_format.MessageToDict(request, use_integers_for_enums=True)
    as_hex = lambda value: base64.b64decode(value).hex()  # noqa: E731
    for block in document.get("resourceSpans", []):
        for scope in block.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ID_KEYS:
                    if key in span:
                        span[key] = as_hex(span[key])
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = as_hex(link[key])
    return document


def _every_value_kind(span) -> None:
    def add(key):
        attribute = span.attributes.add()
        attribute.key = key
        return attribute.value

    add("s").string_value = "text"
    add("empty string").string_value = ""
    add("i").int_value = -(2**62)
    add("zero").int_value = 0
    add("b").bool_value = False
    add("d").double_value = 0.25
    add("nan").double_value = float("nan")
    add("inf").double_value = float("-inf")
    add("bytes").bytes_value = b"\x00\xff"
    add("unset")  # an AnyValue with nothing in it
    array = add("array").array_value
    array.values.add().string_value = "a"
    array.values.add().array_value.values.add().int_value = 3
    add("empty array").array_value.SetInParent()
    kvlist = add("kvlist").kvlist_value
    pair = kvlist.values.add()
    pair.key, pair.value.double_value = "k", 1.5
    kvlist.values.add()  # a pair without key or value
    span.attributes.add()  # an attribute without key or value


def _rich_request() -> trace_service_pb2.ExportTraceServiceRequest:
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.resource_spans.add()  # an empty block
    block = request.resource_spans.add()
    block.schema_url = "https://opentelemetry.io/schemas/1.26.0"
    attribute = block.resource.attributes.add()
    attribute.key, attribute.value.string_value = "service.name", "shop"
    block.resource.dropped_attributes_count = 2
    block.scope_spans.add().scope.name = "no spans"
    scope_spans = block.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "agent", "1.0"
    scope_spans.schema_url = "https://example.com/schema"
    span = scope_spans.spans.add()
    span.trace_id, span.span_id = bytes(range(16)), bytes(range(8))
    span.parent_span_id = bytes(range(1, 9))
    span.name, span.kind, span.flags, span.trace_state = "chat", 3, 0x301, "k=v"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_001, 2**63
    span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count = 1, 2, 3
    span.status.code, span.status.message = 2, "boom"
    _every_value_kind(span)
    event = span.events.add()
    event.name, event.time_unix_nano = "gen_ai.choice", 5
    _every_value_kind(event)
    link = span.links.add()
    link.trace_id, link.span_id, link.flags = bytes(16), bytes(range(8)), 1
    scope_spans.spans.add()  # an empty span
    only_status = scope_spans.spans.add()
    only_status.status.SetInParent()
    return request


def test_it_converts_every_kind_of_field_as_message_to_dict_does():
    request = _rich_request()
    assert request_as_json(request) == _reference(request)


def test_it_converts_what_the_real_sdk_sends_as_message_to_dict_does():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    rng = random.Random(15)
    with tracer.start_as_current_span(
        "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ) as root:
        for number in range(5):
            attributes = {"gen_ai.usage.input_tokens": rng.randint(1, 999), "stop": ["a", "b"],
                          "temperature": rng.random(), "stream": bool(number % 2)}  # fmt: skip
            with tracer.start_as_current_span(f"chat {number}", attributes=attributes,
                                              links=[Link(root.get_span_context())]) as span:  # fmt: skip
                span.add_event("gen_ai.choice", {"index": number})
                if number == 3:
                    span.set_status(Status(StatusCode.ERROR, "tool failed"))
    request = encode_spans(exporter.get_finished_spans())
    body = request.SerializeToString()
    parsed = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    assert request_as_json(parsed) == _reference(parsed)


def test_it_converts_an_empty_request_as_message_to_dict_does():
    request = trace_service_pb2.ExportTraceServiceRequest()
    assert request_as_json(request) == _reference(request) == {}
