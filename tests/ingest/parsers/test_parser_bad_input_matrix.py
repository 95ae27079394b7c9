"""The bad-input matrix, for every new format: each input fails with a TraceParseError whose
message is the module's constant and which names the record (and field where there is one).

Span-tree problems (missing parent, cycles, duplicate ids) are in each span format's own
test file; archive problems in test_archive_sources.py and test_inspect_ai_parser.py.
"""

from __future__ import annotations

import pytest

from ingest.core import jsonio, jsonstream, validate
from ingest.core.errors import TraceParseError
from tests.ingest.parsers.parser_cases import (
    NEW_FORMATS,
    TEMPLATES,
    deeply_nested,
    filled,
    parse_bytes,
    parse_path,
    write_with_huge_string,
)

BAD_JSON_PREFIX = jsonio.MSG_BAD_JSON.split("{")[0]
TOO_DEEP = jsonio.MSG_TOO_DEEP.format(limit=jsonio.MAX_DEPTH)


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_reads_the_filled_template(fmt):
    records = parse_bytes(fmt, filled(fmt))
    assert len(records) == 1
    assert len(records[0].steps) >= 1


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_rejects_a_truncated_file_as_malformed_json(fmt):
    data = filled(fmt)
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(fmt, data[: len(data) // 2])
    assert caught.value.message.startswith(BAD_JSON_PREFIX)
    assert caught.value.record


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_rejects_invalid_utf8_naming_the_byte(fmt):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(fmt, filled(fmt, b"caf\xe9 \xff\xfe"))
    assert caught.value.message.startswith(jsonio.MSG_BAD_UTF8.split("{")[0])
    assert caught.value.record


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_rejects_json_nested_100000_levels_deep(fmt):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(fmt, deeply_nested(fmt))
    assert caught.value.message == TOO_DEEP
    assert caught.value.record


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_refuses_a_100_mb_string_past_the_limit(fmt, tmp_path, small_limits):
    path = tmp_path / TEMPLATES[fmt][0]
    write_with_huge_string(path, fmt, 100 * 1024 * 1024)
    with pytest.raises(TraceParseError) as caught:
        parse_path(fmt, path, limits=small_limits)
    limit = small_limits.max_line_bytes
    assert caught.value.message in {
        jsonio.MSG_TOO_LARGE.format(limit=limit),
        jsonstream.MSG_RECORD_TOO_LARGE.format(limit=limit),
    }
    assert caught.value.record


WRONG_NESTING = {
    "openai_chat": (
        b'{"messages": {"role": "user", "content": "hi"}}\n',
        validate.MSG_NOT_LIST,
        "line 1",
        "messages",
    ),
    "otlp_json": (
        b'{"resourceSpans": {"scopeSpans": []}}',
        validate.MSG_NOT_LIST,
        "document",
        "resourceSpans",
    ),
    "otel_sdk_spans": (b'{"spans": {"name": "x"}}', validate.MSG_NOT_LIST, "document", "spans"),
    "openinference": (
        b'{"name": "x", "context": {"trace_id": "t", "span_id": "s"}, "span_kind": "LLM", "attributes": [1, 2]}\n',
        validate.MSG_NOT_OBJECT,
        "line 1",
        "attributes",
    ),
    "swe_agent": (
        b'{"trajectory": {"action": "ls"}, "history": []}',
        validate.MSG_NOT_LIST,
        "document",
        "trajectory",
    ),
    "openhands": (b'{"events": []}', jsonstream.MSG_TOP_NOT_ARRAY, "document", ""),
    "inspect_ai": (
        b'{"version": 2, "eval": {}, "samples": [{"id": 1, "messages": {"role": "user"}}]}',
        validate.MSG_NOT_LIST,
        "samples[0]",
        "messages",
    ),
    "langfuse": (
        b'{"id": "t1", "observations": {"id": "o1", "type": "GENERATION"}}',
        validate.MSG_NOT_LIST,
        "trace t1",
        "observations",
    ),
    "langsmith": (
        b'[{"id": "r1", "trace_id": "r1", "run_type": "chain", "inputs": "hi"}]',
        validate.MSG_NOT_OBJECT,
        "item 0, run r1",
        "inputs",
    ),
}


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_rejects_wrong_nesting_naming_record_and_field(fmt):
    data, message, record, field = WRONG_NESTING[fmt]
    with pytest.raises(TraceParseError) as caught:
        parse_bytes(fmt, data)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        message,
        record,
        field,
    )


@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_it_rejects_an_empty_file(fmt):
    with pytest.raises(TraceParseError):
        parse_bytes(fmt, b"  \n")


def test_a_cut_string_is_placed_in_plain_words():
    # json says "Unterminated string starting at"; "at at line" was written before.
    with pytest.raises(TraceParseError) as caught:
        jsonio.loads('{"task": "book a fli', record="line 3")
    assert "Unterminated string starting at character 10 of the line" in caught.value.message
    assert " at at " not in caught.value.message
