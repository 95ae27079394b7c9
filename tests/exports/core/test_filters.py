from __future__ import annotations

from datetime import date

import pytest

from exports.core.filters import (
    KINDS,
    MSG_BAD_ALPHA,
    MSG_BAD_DATE,
    MSG_BAD_KIND,
    MSG_BAD_MISBEHAVIOURS,
    MSG_BAD_RANGE,
    MSG_NO_KIND,
    FilterError,
    parse_filters,
    parse_kinds,
)


def test_it_parses_every_filter():
    filters = parse_filters(
        {
            "environment": " airline ",
            "policy_model": "gpt-4o",
            "misbehaviours": "5, 3,5",
            "alpha": "0.2",
            "human_only": "on",
            "date_from": "2026-01-01",
            "date_to": "2026-02-01",
            "diagnosis_window": "4",
        }
    )
    assert filters.environment == "airline" and filters.misbehaviours == (3, 5)
    assert filters.alpha == 0.2 and filters.human_only is True
    assert (filters.date_from, filters.date_to) == (date(2026, 1, 1), date(2026, 2, 1))
    assert filters.to_json()["date_to"] == "2026-02-01"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"alpha": "1.5"}, MSG_BAD_ALPHA),
        ({"alpha": "abc"}, MSG_BAD_ALPHA),
        ({"date_from": "yesterday"}, MSG_BAD_DATE.format(field="date_from")),
        ({"date_to": "2026-02-30"}, "date_to '2026-02-30' is no day of the calendar."),
        ({"date_from": "2026-02-02", "date_to": "2026-02-01"}, MSG_BAD_RANGE),
        ({"misbehaviours": "a,b"}, MSG_BAD_MISBEHAVIOURS),
    ],
)
def test_it_explains_a_bad_filter(params, message):
    with pytest.raises(FilterError) as caught:
        parse_filters(params)
    assert str(caught.value) == message


def test_it_orders_kinds_canonically():
    assert parse_kinds("start_states,sft") == ("sft", "start_states")
    assert parse_kinds(list(KINDS)) == KINDS


def test_it_rejects_unknown_or_no_kinds():
    with pytest.raises(FilterError, match="Unknown export kind"):
        parse_kinds("sft,dpo")
    assert MSG_BAD_KIND.format(kind="dpo").startswith("Unknown export kind 'dpo'")
    with pytest.raises(FilterError, match=MSG_NO_KIND):
        parse_kinds("")


def test_it_reads_and_checks_the_observation_cut():
    import pytest

    from exports.core.filters import FilterError, parse_filters

    assert parse_filters({"observation_chars": "4000"}).observation_chars == 4000
    assert parse_filters({}).observation_chars == 0
    with pytest.raises(FilterError) as refused:
        parse_filters({"observation_chars": "-1"})
    assert refused.value.field == "observation_chars"
