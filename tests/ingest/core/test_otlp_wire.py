"""OTLP/JSON attribute values: an intValue is a decimal string or a whole number."""

from __future__ import annotations

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.otlp_wire import MSG_BAD_INT, any_value


@pytest.mark.parametrize(("raw", "number"), [("42", 42), (42, 42), ("-7", -7), (3.0, 3)])
def test_it_reads_an_int_value_sent_as_a_decimal_string_or_a_number(raw, number):
    assert any_value({"intValue": raw}, record="r", field="attributes.n") == number


def test_it_names_the_attribute_and_says_an_int_value_must_be_an_integer():
    with pytest.raises(TraceParseError) as caught:
        any_value({"intValue": "notanumber"}, record="spans[0]", field="attributes.n")
    assert caught.value.field == "attributes.n"
    assert caught.value.message == MSG_BAD_INT.format(value='"notanumber"')
    assert str(caught.value) == (
        "spans[0], field attributes.n: intValue must be an integer (OTLP/JSON sends an int64 "
        'as a decimal string such as "42" or as a number); got "notanumber".'
    )


@pytest.mark.parametrize("raw", [7.5, True, None, [1], float("inf")])
def test_it_refuses_an_int_value_that_is_no_integer(raw):
    with pytest.raises(TraceParseError) as caught:
        any_value({"intValue": raw}, record="r", field="attributes.n")
    assert caught.value.message.startswith("intValue must be an integer")


def test_it_quotes_a_long_refused_value_cut_short():
    with pytest.raises(TraceParseError) as caught:
        any_value({"intValue": "x" * 500}, record="r", field="attributes.n")
    assert len(caught.value.message) < len(MSG_BAD_INT) + 60
