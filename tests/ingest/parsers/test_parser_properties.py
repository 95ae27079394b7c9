"""Property: for any input, every parser yields records or raises TraceParseError, nothing else.

Three kinds of input per parser: arbitrary bytes, arbitrary JSON documents, and each
format's valid template with one value replaced by arbitrary JSON (which reaches far deeper
into the parser than random bytes do). Examples are kept few so the suite stays fast.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.core.errors import TraceParseError
from ingest.core.records import TrajectoryRecord
from ingest.parsers import PARSERS
from tests.ingest.parsers.parser_cases import TEMPLATES, filled, parse_bytes

FORMATS = sorted(PARSERS)
PROPERTY_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
# Keys the parsers look for, so generated objects hit real code paths.
KEYS = [
    "role",
    "content",
    "name",
    "tool_calls",
    "tool_call_id",
    "function",
    "arguments",
    "id",
    "type",
    "parts",
    "result",
    "response",
    "messages",
    "steps",
    "history",
    "trajectory",
    "action",
    "observation",
    "args",
    "source",
    "cause",
    "extras",
    "samples",
    "scores",
    "value",
    "error",
    "spans",
    "context",
    "parent",
    "span_id",
    "trace_id",
    "attributes",
    "status",
    "status_code",
    "resourceSpans",
    "scopeSpans",
    "traceId",
    "spanId",
    "parentSpanId",
    "key",
    "stringValue",
    "arrayValue",
    "kvlistValue",
    "values",
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output",
    "gen_ai.tool.name",
    "outcome",
    "reward",
    "info",
    "exit_status",
    "epoch",
    "start_time",
    "startTimeUnixNano",
    "span_kind",
    "parent_id",
    "thought",
    "state",
    "traj",
    "observations",
    "parentObservationId",
    "startTime",
    "level",
    "statusMessage",
    "input",
    "output",
    "model",
    "dataType",
    "observationId",
    "data",
    "trace",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "chat",
            "execute_tool",
            "invoke_agent",
            "tool",
            "assistant",
            "user",
            "ok",
            "error",
            "C",
            "GENERATION",
            "TOOL",
            "AGENT",
            "ERROR",
            "CATEGORICAL",
            "1",
            "",
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=5),
    max_leaves=25,
)


def _check(fmt: str, data: bytes) -> None:
    try:
        records = parse_bytes(fmt, data)
    except TraceParseError:
        return
    assert all(isinstance(record, TrajectoryRecord) for record in records)
    for record in records:
        assert [step.index for step in record.steps] == list(range(len(record.steps)))


@pytest.mark.parametrize("fmt", FORMATS)
@PROPERTY_SETTINGS
@given(data=st.binary(max_size=600))
def test_it_never_fails_otherwise_on_any_bytes(fmt, data):
    _check(fmt, data)


@pytest.mark.parametrize("fmt", FORMATS)
@PROPERTY_SETTINGS
@given(value=json_values, as_lines=st.booleans())
def test_it_never_fails_otherwise_on_any_json(fmt, value, as_lines):
    text = json.dumps(value)
    _check(fmt, ((text + "\n" + text + "\n") if as_lines else text).encode())


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*path, index)))
    return found


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


@pytest.mark.parametrize("fmt", FORMATS)
@PROPERTY_SETTINGS
@given(choice=st.integers(min_value=0, max_value=10_000), new=json_values)
def test_it_never_fails_otherwise_on_a_mutated_valid_document(fmt, choice, new):
    template = filled(fmt).decode()
    lines = template.endswith("\n")
    document = json.loads(template)
    paths = _paths(document)
    mutated = json.dumps(_replace(document, paths[choice % len(paths)], new))
    _check(fmt, (mutated + "\n").encode() if lines else mutated.encode())


def test_it_covers_every_registered_parser():
    assert set(FORMATS) == set(TEMPLATES)
