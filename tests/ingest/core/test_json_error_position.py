"""Malformed JSON in a JSON Lines record: the decoder's position is told inside the
record ("character 41 of the line"), never as a "line 2" that is not the file's line 2."""

from __future__ import annotations

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import loads


def _message(text: str, record: str) -> str:
    with pytest.raises(TraceParseError) as caught:
        loads(text, record=record)
    return str(caught.value)


def test_it_places_the_error_at_a_character_of_the_line():
    line = '{"id": "r2", "steps": [{"role": "user"} {"role": "tool"}]}\n'
    assert _message(line, "line 2") == (
        "line 2: Malformed JSON: Expecting ',' delimiter at character 41 of the line."
    )


def test_it_says_a_line_that_stops_short_ends_too_soon():
    message = _message('{"id": "r2", "steps": [{"role": "user"}\n', "line 2")
    assert message == (
        "line 2: Malformed JSON: Expecting ',' delimiter at the end of the line: "
        "the record stops short."
    )
    assert message.count("line 2") == 1


def test_it_keeps_line_and_column_inside_a_document():
    message = _message('{\n  "id": "r2",,\n}', "document")
    assert message == (
        "document: Malformed JSON: Expecting property name enclosed in double quotes "
        "at line 2 column 14."
    )
