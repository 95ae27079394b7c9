"""OpenHands event streams: exact counts on the four samples, events to steps, outcome."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.parsers.openhands import MSG_BAD_EVENT, MSG_NO_EVENTS
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import parse_bytes, parse_path

TRAJS = "openhands/tests/runtime/trajs"
EXPECTED_STEPS = {
    "basic.json": 4,
    "basic_gui_mode.json": 10,
    "basic_interactions.json": 6,
    "wrong_initial_state.json": 8,
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_it_reads_every_sample_with_exact_counts(name):
    records = parse_path("openhands", shared_file(f"{TRAJS}/{name}"))
    assert len(records) == 1
    assert len(records[0].steps) == EXPECTED_STEPS[name]


def test_it_maps_actions_and_observations():
    (record,) = parse_path("openhands", shared_file(f"{TRAJS}/wrong_initial_state.json"))
    assert [(s.kind, s.tool_name) for s in record.steps] == [
        (StepKind.MESSAGE, ""),
        (StepKind.TOOL_CALL, "str_replace_editor"),
        (StepKind.TOOL_RESULT, "str_replace_editor"),
        (StepKind.TOOL_CALL, "execute_bash"),
        (StepKind.TOOL_RESULT, "execute_bash"),
        (StepKind.TOOL_CALL, "str_replace_editor"),
        (StepKind.TOOL_RESULT, "str_replace_editor"),
        (StepKind.TOOL_CALL, "finish"),
    ]
    run = record.steps[3]
    assert run.tool_args["command"] == "mv /workspace/game_2048.py /workspace/2048.py"
    assert run.tool_call_id == record.steps[4].tool_call_id != ""
    assert run.started_at is not None and run.started_at.tzinfo is not None
    assert record.task_text == "Please rename game_2048.py to 2048.py"
    assert record.policy_model == "claude-3-5-sonnet-20241022"
    assert record.outcome == Outcome.UNKNOWN


def test_a_call_holds_the_arguments_the_model_sent():
    # OpenHands' own action fields for an edit hold "content": "" (the file is in the
    # model's file_text) and its translated code: the page showed an empty file created.
    (record,) = parse_path("openhands", shared_file(f"{TRAJS}/basic.json"))
    create = record.steps[1]
    assert create.tool_name == "str_replace_editor"
    assert create.tool_args["command"] == "create"
    assert create.tool_args["file_text"].startswith("import random")
    assert create.tool_args["path"] == "/workspace/game_2048.py"
    assert "translated_ipython_code" in create.metadata["args"]
    assert create.is_mutating is True  # an edit action writes, whatever the tool is called
    (viewed,) = parse_path("openhands", shared_file(f"{TRAJS}/wrong_initial_state.json"))
    view = viewed.steps[1]
    assert view.tool_args["command"] == "view" and view.is_mutating is False


def test_without_the_models_response_the_actions_fields_are_the_arguments():
    event = {
        "id": 1,
        "source": "agent",
        "action": "run",
        "args": {"command": "ls", "thought": "look around"},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c1"},
    }
    (record,) = parse_bytes("openhands", _events(event), "run.json")
    assert record.steps[0].tool_args == {"command": "ls"}
    assert record.steps[0].content == "look around"


def test_it_keeps_environment_events_in_metadata():
    (record,) = parse_path("openhands", shared_file(f"{TRAJS}/basic_gui_mode.json"))
    assert len(record.metadata["environment_events"]) == 8
    assert record.metadata["event_count"] == 18
    assert record.metadata["final_agent_state"] == "awaiting_user_input"


def _events(*events):
    return json.dumps(list(events)).encode()


def test_it_fails_a_run_whose_agent_ended_in_error():
    data = _events(
        {
            "id": 0,
            "timestamp": "2025-01-01T00:00:00",
            "source": "user",
            "action": "message",
            "args": {"content": "go"},
        },
        {
            "id": 1,
            "timestamp": "2025-01-01T00:00:01",
            "source": "agent",
            "action": "run",
            "args": {"command": "ls", "thought": "look"},
        },
        {
            "id": 2,
            "timestamp": "2025-01-01T00:00:02",
            "source": "agent",
            "observation": "error",
            "cause": 1,
            "content": "boom",
            "extras": {},
        },
        {
            "id": 3,
            "timestamp": "2025-01-01T00:00:03",
            "source": "environment",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "error"},
        },
    )
    (record,) = parse_bytes("openhands", data)
    assert record.outcome == Outcome.FAILURE
    assert [(s.kind, s.is_error, s.tool_name) for s in record.steps] == [
        (StepKind.MESSAGE, False, ""),
        (StepKind.TOOL_CALL, False, "run"),
        (StepKind.TOOL_RESULT, True, "run"),
    ]


def test_it_rejects_an_event_with_neither_action_nor_observation():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openhands", _events({"id": 0, "source": "user"}))
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        MSG_BAD_EVENT,
        "item 0",
        "action",
    )


def test_it_rejects_an_empty_event_list():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("openhands", b"[]")
    assert caught.value.message == MSG_NO_EVENTS


def _finish(tool_call_metadata=None, **args):
    event = {
        "id": 5,
        "timestamp": "2025-01-01T00:00:05",
        "source": "agent",
        "message": "The tests pass; submitting the fix.",
        "action": "finish",
        "args": {"outputs": {}, "thought": "The tests pass; submitting the fix.", **args},
    }
    if tool_call_metadata is not None:
        event["tool_call_metadata"] = tool_call_metadata
    return event


def _metadata(name, arguments):
    call = {"id": "toolu_9", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {
        "function_name": name,
        "tool_call_id": "toolu_9",
        "model_response": {
            "model": "claude-3-5-sonnet-20241022",
            "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
        },
    }


def test_a_finish_that_calls_a_function_is_a_call_of_it():
    # It was a message, so the tools table counted SWE-agent's submit and not OpenHands'.
    metadata = _metadata("submit", '{"summary": "fixed the slice"}')
    (record,) = parse_bytes("openhands", _events(_finish(metadata)))
    (step,) = record.steps
    assert (step.kind, step.role, step.tool_name, step.tool_call_id) == (
        StepKind.TOOL_CALL,
        "assistant",
        "submit",
        "toolu_9",
    )
    assert step.tool_args == {"summary": "fixed the slice"}
    assert step.content == "The tests pass; submitting the fix."
    assert step.metadata["args"] == {"outputs": {}}


def test_a_finish_keeps_its_closing_report_as_the_calls_text():
    metadata = {"function_name": "finish", "tool_call_id": "call_1"}
    (record,) = parse_bytes("openhands", _events(_finish(metadata, final_thought="Renamed it.")))
    (step,) = record.steps
    assert (step.kind, step.tool_name, step.content) == (
        StepKind.TOOL_CALL,
        "finish",
        "Renamed it.",
    )
    assert step.tool_args == {"outputs": {}, "final_thought": "Renamed it."}


def test_the_samples_finish_calls_are_calls_of_finish():
    for name in ("basic.json", "basic_interactions.json", "wrong_initial_state.json"):
        (record,) = parse_path("openhands", shared_file(f"{TRAJS}/{name}"))
        last = record.steps[-1]
        assert (last.kind, last.tool_name, last.tool_args) == (StepKind.TOOL_CALL, "finish", {})
    (record,) = parse_path("openhands", shared_file(f"{TRAJS}/basic_interactions.json"))
    assert record.steps[-1].content == "All done! What's next on the agenda?"


def test_a_finish_without_a_function_name_stays_the_closing_message():
    for metadata in (None, {"tool_call_id": "call_1"}):
        (record,) = parse_bytes("openhands", _events(_finish(metadata)))
        (step,) = record.steps
        assert (step.kind, step.tool_name, step.content) == (
            StepKind.MESSAGE,
            "",
            "The tests pass; submitting the fix.",
        )
