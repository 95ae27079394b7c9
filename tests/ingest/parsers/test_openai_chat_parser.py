"""OpenAI chat JSONL: one conversation per line with the outcome fields we define."""

from __future__ import annotations

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MSG_BAD_JSON
from ingest.core.records import Outcome, StepKind
from ingest.parsers.openai_chat import MSG_BAD_OUTCOME
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import FIXTURES, parse_bytes, parse_path

AIRLINE = FIXTURES / "openai_chat_airline.jsonl"


def test_it_reads_one_trajectory_per_line_with_exact_counts():
    records = parse_path("openai_chat", AIRLINE)
    assert [(r.external_id, len(r.steps)) for r in records] == [
        ("airline-7-0", 5),
        ("airline-7-1", 2),
        ("openai_chat_airline:3", 2),
    ]


def test_it_maps_the_defined_fields():
    record = parse_path("openai_chat", AIRLINE)[0]
    assert (record.task_id, record.environment, record.agent_system, record.policy_model) == (
        "airline/7",
        "airline",
        "tool-calling agent",
        "gpt-4o",
    )
    assert (record.outcome, record.reward) == (Outcome.FAILURE, 0.0)
    assert record.metadata["tools"][0]["function"]["name"] == "cancel_reservation"
    assert [s.kind for s in record.steps] == [
        StepKind.SYSTEM,
        StepKind.MESSAGE,
        StepKind.TOOL_CALL,
        StepKind.TOOL_RESULT,
        StepKind.MESSAGE,
    ]
    assert record.steps[3].is_error is True
    assert record.task_text == "Cancel reservation ABC123."


def test_it_takes_success_and_keeps_unknown_fields_in_metadata():
    second, third = parse_path("openai_chat", AIRLINE)[1:]
    assert second.outcome == Outcome.SUCCESS
    assert second.metadata["extra"] == {"run": "nightly-12"}
    assert third.outcome == Outcome.UNKNOWN
    assert third.external_id == "openai_chat_airline:3"


def test_it_reads_the_mast_example_with_an_outcome_object():
    records = parse_path("openai_chat", shared_file("mast_taxonomy/adamast/examples/traces.jsonl"))
    assert [(r.external_id, len(r.steps), r.outcome, r.reward) for r in records] == [
        ("demo-1", 2, Outcome.FAILURE, 0.0),
        ("demo-2", 2, Outcome.SUCCESS, 1.0),
    ]
    assert records[0].task_text == "Return the final calculation"
    assert records[0].metadata == {"system": "demo-calculator"}


@pytest.mark.parametrize(
    "line", [b'{"messages": [], "outcome": "meh"}', b'{"messages": [], "outcome": 3}']
)
def test_it_rejects_an_unknown_outcome(line):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", line)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        MSG_BAD_OUTCOME,
        "line 1",
        "outcome",
    )


def test_it_names_the_line_of_a_malformed_record():
    data = b'{"messages": []}\n{"messages": [\n'
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openai_chat", data)
    assert caught.value.record == "line 2"
    assert caught.value.message.startswith(MSG_BAD_JSON.split("{")[0])
