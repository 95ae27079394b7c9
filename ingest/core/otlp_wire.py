"""The OTLP/JSON wire shape of traces as :class:`ingest.core.spans.Span` objects.

One home for this knowledge: the ``otlp_json`` file parser and the OTLP/HTTP receiver
(protobuf bodies are first turned into the same JSON shape) both read spans through
:func:`block_spans`.

The wire shape is ``{resourceSpans: [{resource, scopeSpans: [{scope, spans: [...]}]}]}``.
Each span has hex ``traceId``/``spanId``/``parentSpanId``, ``startTimeUnixNano`` /
``endTimeUnixNano`` as decimal strings, typed attribute values (``stringValue``,
``intValue``, ``doubleValue``, ``boolValue``, ``bytesValue``, ``arrayValue``,
``kvlistValue``) and ``status: {code, message}``. The scope goes to the span's
``extra["scope"]``; any other span field (kind, events, links, flags, ...) stays in
``extra`` under its wire name.

Example:
    >>> block = {"resource": {"attributes": [{"key": "service.name",
    ...     "value": {"stringValue": "shop"}}]}, "scopeSpans": [{"spans": [
    ...     {"traceId": "AB", "spanId": "01", "name": "chat"}]}]}
    >>> [(span.trace_id, resource) for span, resource in block_spans(block, index=0)]
    [('ab', {'service.name': 'shop'})]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from ingest.core.errors import TraceParseError
from ingest.core.spans import STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span, parse_ns
from ingest.core.validate import (
    optional_list,
    optional_object,
    optional_str,
    require_object,
    require_str,
)

MSG_BAD_VALUE = "Expected an OTLP AnyValue object (stringValue, intValue, doubleValue, boolValue, bytesValue, arrayValue or kvlistValue)."
MSG_BAD_INT = (
    "intValue must be an integer (OTLP/JSON sends an int64 as a decimal string such as "
    '"42" or as a number); got {value}.'
)
MSG_BAD_DOUBLE = (
    "doubleValue must be a number (a JSON number, a decimal string, or "
    '"NaN", "Infinity" or "-Infinity"); got {value}.'
)
MSG_BAD_STATUS = "Expected a status code: 0/1/2 or STATUS_CODE_UNSET/OK/ERROR."
# How much of a refused value an error message quotes.
QUOTED_VALUE_CHARS = 40

_STATUS = {
    0: STATUS_UNSET,
    1: STATUS_OK,
    2: STATUS_ERROR,
    "STATUS_CODE_UNSET": STATUS_UNSET,
    "STATUS_CODE_OK": STATUS_OK,
    "STATUS_CODE_ERROR": STATUS_ERROR,
    "UNSET": STATUS_UNSET,
    "OK": STATUS_OK,
    "ERROR": STATUS_ERROR,
}
SPAN_KEYS = {
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "status",
}
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def any_value(value: Any, *, record: str, field: str) -> Any:
    """An OTLP AnyValue as a plain JSON value.

    >>> any_value({"intValue": "7"}, record="r", field="f")
    7
    """
    if not isinstance(value, dict):
        raise TraceParseError(MSG_BAD_VALUE, record=record, field=field)
    if not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        return _int_value(value["intValue"], record=record, field=field)
    if "doubleValue" in value:
        raw = value["doubleValue"]
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise TraceParseError(
                MSG_BAD_DOUBLE.format(value=_quoted(raw)), record=record, field=field
            ) from None
        return number if math.isfinite(number) else str(raw)
    if "bytesValue" in value:
        return value["bytesValue"]
    if "arrayValue" in value:
        array = require_object(value["arrayValue"], record=record, field=field + ".arrayValue")
        items = optional_list(array, "values", record=record, prefix=field + ".arrayValue.")
        return [
            any_value(item, record=record, field=f"{field}[{i}]") for i, item in enumerate(items)
        ]
    if "kvlistValue" in value:
        kvlist = require_object(value["kvlistValue"], record=record, field=field + ".kvlistValue")
        pairs = optional_list(kvlist, "values", record=record, prefix=field + ".kvlistValue.")
        return attributes_dict(pairs, record=record, field=field)
    raise TraceParseError(MSG_BAD_VALUE, record=record, field=field)


def _quoted(raw: Any) -> str:
    """A refused value as the message quotes it: JSON, cut short."""
    text = json.dumps(raw, ensure_ascii=False, default=str)
    return text if len(text) <= QUOTED_VALUE_CHARS else text[: QUOTED_VALUE_CHARS - 1] + "…"


def _int_value(raw: Any, *, record: str, field: str) -> int:
    """An ``intValue``: a decimal string or a whole JSON number (never ``true``, ``7.5``).

    >>> _int_value("-12", record="r", field="f"), _int_value(3.0, record="r", field="f")
    (-12, 3)
    """
    try:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise TypeError(raw)
        return int(raw)
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        raise TraceParseError(
            MSG_BAD_INT.format(value=_quoted(raw)), record=record, field=field
        ) from None


def attributes_dict(pairs: list[Any], *, record: str, field: str) -> dict[str, Any]:
    """OTLP ``[{key, value}]`` attributes as a plain dict."""
    attributes: dict[str, Any] = {}
    for position, raw in enumerate(pairs):
        where = f"{field}[{position}]"
        pair = require_object(raw, record=record, field=where)
        key = require_str(pair, "key", record=record, prefix=where + ".")
        attributes[key] = any_value(pair.get("value", {}), record=record, field=f"{field}.{key}")
    return attributes


def _status(raw: Any, record: str) -> tuple[str, str]:
    status = optional_object({"status": raw}, "status", record=record)
    code = status.get("code", 0)
    if isinstance(code, bool) or code not in _STATUS:
        raise TraceParseError(MSG_BAD_STATUS, record=record, field="status.code")
    return _STATUS[code], optional_str(status, "message", record=record, prefix="status.")


def is_hex(value: str) -> bool:
    """Whether every character is a hex digit (the empty string is).

    >>> is_hex("0aF9"), is_hex("0x1")
    (True, False)
    """
    return HEX_DIGITS.issuperset(value)


def _hex_id(value: str) -> str:
    # Files in the wild carry upper-case hex (the specification's own example does).
    return value.lower() if is_hex(value) else value


def span_from_object(raw: Any, *, record: str, position: int, scope: dict[str, Any]) -> Span:
    """One OTLP/JSON span object as a Span (ids lower-cased, attributes decoded)."""
    obj = require_object(raw, record=record)
    status, message = _status(obj.get("status"), record)
    extra = {k: v for k, v in obj.items() if k not in SPAN_KEYS}
    if scope:
        extra["scope"] = scope
    return Span(
        trace_id=_hex_id(require_str(obj, "traceId", record=record)),
        span_id=_hex_id(require_str(obj, "spanId", record=record)),
        parent_id=_hex_id(optional_str(obj, "parentSpanId", record=record)),
        name=optional_str(obj, "name", record=record),
        start_ns=parse_ns(obj.get("startTimeUnixNano"), record=record, field="startTimeUnixNano"),
        end_ns=parse_ns(obj.get("endTimeUnixNano"), record=record, field="endTimeUnixNano"),
        status=status,
        status_message=message,
        attributes=attributes_dict(
            optional_list(obj, "attributes", record=record), record=record, field="attributes"
        ),
        extra=extra,
        record=record,
        position=position,
    )


def block_spans(
    block: Any, *, index: int, position: int = 0
) -> Iterator[tuple[Span, dict[str, Any]]]:
    """The spans of one ``resourceSpans`` block, each with its resource attributes; the
    block's unusual fields (anything beside ``resource.attributes`` and ``scopeSpans``) go
    to each span's ``extra["resource_block"]``.

    ``position`` numbers the spans (file order) from the given start.
    """
    where = f"resourceSpans[{index}]"
    obj = require_object(block, record=where)
    resource_obj = optional_object(obj, "resource", record=where)
    resource = attributes_dict(
        optional_list(resource_obj, "attributes", record=where, prefix="resource."),
        record=where,
        field="resource.attributes",
    )
    block_extra = {k: v for k, v in obj.items() if k not in {"resource", "scopeSpans"}}
    block_extra.update({f"resource.{k}": v for k, v in resource_obj.items() if k != "attributes"})
    for s_index, raw_scope in enumerate(optional_list(obj, "scopeSpans", record=where)):
        scope_where = f"{where}.scopeSpans[{s_index}]"
        scope_spans = require_object(raw_scope, record=scope_where)
        scope_obj = dict(optional_object(scope_spans, "scope", record=scope_where))
        scope_obj.update(
            {f"scopeSpans.{k}": v for k, v in scope_spans.items() if k not in {"scope", "spans"}}
        )
        if "attributes" in scope_obj:
            scope_obj["attributes"] = attributes_dict(
                optional_list(scope_obj, "attributes", record=scope_where, prefix="scope."),
                record=scope_where,
                field="scope.attributes",
            )
        for k_index, raw_span in enumerate(optional_list(scope_spans, "spans", record=scope_where)):
            span = span_from_object(
                raw_span,
                record=f"{scope_where}.spans[{k_index}]",
                position=position,
                scope=scope_obj,
            )
            position += 1
            if block_extra:
                span.extra["resource_block"] = block_extra
            yield span, resource


def document_spans(
    blocks: list[Any], *, position: int = 0, first_index: int = 0
) -> list[tuple[Span, dict[str, Any]]]:
    """The spans of a list of ``resourceSpans`` blocks (numbered from ``first_index``), each
    with its resource attributes, numbered from ``position``."""
    pairs: list[tuple[Span, dict[str, Any]]] = []
    for index, block in enumerate(blocks, start=first_index):
        pairs.extend(block_spans(block, index=index, position=position + len(pairs)))
    return pairs
