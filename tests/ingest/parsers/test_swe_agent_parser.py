"""SWE-agent .traj files: exact counts on all 22 samples, old and new layouts, outcome rule."""

from __future__ import annotations

import json

import pytest

from ingest.core import validate
from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.parsers.swe_agent import MSG_BAD_ARGUMENTS, MSG_BAD_CONTENT, MSG_NO_STEPS
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import parse_bytes, parse_path

TEST_RUNS = "swe_agent/tests/test_data/trajectories"
DEMOS = "swe_agent/trajectories/demonstrations"
MARSHMALLOW = "marshmallow-code__marshmallow-1867.traj"
EXPECTED_STEPS = {
    f"{TEST_RUNS}/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj": 12,
    f"{TEST_RUNS}/gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj": 13,
    f"{TEST_RUNS}/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj": 27,
    f"{DEMOS}/ctf/crypto/BabyEncryption.traj": 31,
    f"{DEMOS}/ctf/crypto/BabyTimeCapsule.traj": 19,
    f"{DEMOS}/ctf/crypto/eps.traj": 30,
    f"{DEMOS}/ctf/crypto/katy.traj": 37,
    f"{DEMOS}/ctf/forensics/flash.traj": 9,
    f"{DEMOS}/ctf/misc/networking_1.traj": 9,
    f"{DEMOS}/ctf/pwn/warmup.traj": 15,
    f"{DEMOS}/ctf/rev/rock.traj": 26,
    f"{DEMOS}/ctf/web/i_got_id_demo.traj": 44,
    f"{DEMOS}/function_calling_simple.traj": 12,
    f"{DEMOS}/human_thought__swe-bench-HumanEvalFix-python__lcb__t-0.00__p-0.95__c-4.00__install-0/humanevalfix-python-0.traj": 12,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__install-1___install_from_source/{MARSHMALLOW}": 30,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__default_sys-env_cursors_window100__t-0.20__p-0.95__c-2.00__install-1/{MARSHMALLOW}": 26,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__default_sys-env_window100__t-0.20__p-0.95__c-2.00__install-1/{MARSHMALLOW}": 24,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/{MARSHMALLOW}": 24,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__function_calling_replace__install-1/{MARSHMALLOW}": 24,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/{MARSHMALLOW}": 28,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__xml_sys-env_cursors_window100__t-0.20__p-0.95__c-2.00__install-1/{MARSHMALLOW}": 26,
    f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__xml_sys-env_window100__t-0.20__p-0.95__c-2.00__install-1/{MARSHMALLOW}": 24,
}


@pytest.mark.parametrize("relative", sorted(EXPECTED_STEPS))
def test_it_reads_every_sample_with_exact_counts(relative):
    records = parse_path("swe_agent", shared_file(relative))
    assert len(records) == 1
    assert len(records[0].steps) == EXPECTED_STEPS[relative]
    assert [s.index for s in records[0].steps] == list(range(EXPECTED_STEPS[relative]))


def test_it_has_22_samples():
    assert len(EXPECTED_STEPS) == 22


def test_it_maps_history_to_system_task_actions_and_observations():
    (record,) = parse_path("swe_agent", shared_file(f"{DEMOS}/function_calling_simple.traj"))
    kinds = [s.kind for s in record.steps]
    assert kinds[:4] == [
        StepKind.SYSTEM,
        StepKind.MESSAGE,
        StepKind.TOOL_CALL,
        StepKind.TOOL_RESULT,
    ]
    call = record.steps[2]
    assert (call.tool_name, call.tool_args) == ("find_file", {"file_name": "missing_colon.py"})
    assert call.tool_call_id.startswith("call_")
    assert record.steps[3].tool_call_id == call.tool_call_id
    # Each result is named after the call it answers (the page said nothing of which).
    results = [s for s in record.steps if s.kind == StepKind.TOOL_RESULT]
    calls = {s.tool_call_id: s.tool_name for s in record.steps if s.kind == StepKind.TOOL_CALL}
    assert results and all(r.tool_name == calls[r.tool_call_id] for r in results)
    assert record.task_text.startswith("We're currently solving the following issue")
    assert record.agent_system == "SWE-agent"


def test_the_task_is_the_issue_not_the_demonstration_shown_before_it():
    relative = next(path for path in EXPECTED_STEPS if path.endswith("pydicom__pydicom-1458.traj"))
    (record,) = parse_path("swe_agent", shared_file(relative))
    assert record.steps[1].content.startswith("Here is a demonstration")
    assert record.task_text.startswith("We're currently solving the following issue")
    assert "Pixel Representation" in record.task_text


def test_it_attaches_old_string_state_and_appends_the_final_submit():
    relative = next(k for k in EXPECTED_STEPS if "6e44b9" in k)
    (record,) = parse_path("swe_agent", shared_file(relative))
    first_call = next(s for s in record.steps if s.kind == StepKind.TOOL_CALL)
    assert first_call.metadata["turn"]["state"] == {
        "open_file": "n/a",
        "working_dir": "/SWE-agent__test-repo",
    }
    assert float(first_call.metadata["turn"]["execution_time"]) > 0
    assert record.steps[-2].tool_name == "submit"
    # The appended turn carries no agent: it is the act of the agent that acted last, not
    # a second agent called "assistant" (exports would split the run between two).
    assert record.steps[-2].agent == first_call.agent == "main"
    assert record.steps[-1].kind == StepKind.TOOL_RESULT
    assert record.policy_model == "gpt-4o"


def test_it_keeps_turns_that_match_no_history_action_in_metadata():
    (record,) = parse_path("swe_agent", shared_file(f"{DEMOS}/ctf/crypto/BabyEncryption.traj"))
    assert [turn["action"].split("\n")[0] for turn in record.metadata["unmatched_trajectory"]] == [
        "edit 2:2 decrypt.py"
    ]


def test_it_does_not_keep_per_turn_copies_of_the_conversation():
    relative = next(k for k in EXPECTED_STEPS if "function_calling_replace_from_source" in k)
    (record,) = parse_path("swe_agent", shared_file(relative))
    turn = next(s.metadata["turn"] for s in record.steps if "turn" in s.metadata)
    assert turn["messages_omitted"] is True
    assert "messages" not in turn


def _traj(exit_status=None, **info):
    if exit_status is not None:
        info["exit_status"] = exit_status
    return json.dumps(
        {
            "trajectory": [{"action": "submit", "observation": "diff", "thought": "done"}],
            "history": [],
            "info": info,
        }
    ).encode()


@pytest.mark.parametrize(
    "status, outcome",
    [
        ("submitted", Outcome.UNKNOWN),
        ("submitted (exit_cost)", Outcome.FAILURE),
        ("exit_context", Outcome.FAILURE),
        ("early_exit", Outcome.FAILURE),
        (None, Outcome.UNKNOWN),
    ],
)
def test_it_derives_the_outcome_from_the_exit_status(status, outcome):
    (record,) = parse_bytes("swe_agent", _traj(status))
    assert record.outcome == outcome


def test_it_prefers_an_explicit_resolved_flag():
    (record,) = parse_bytes("swe_agent", _traj("submitted", resolved=True))
    assert record.outcome == Outcome.SUCCESS


def test_it_rejects_a_file_with_neither_history_nor_trajectory():
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("swe_agent", b'{"info": {}}')
    assert (caught.value.message, caught.value.field) == (MSG_NO_STEPS, "history")


def _run(*history, **info):
    """A .traj with the issue, then the given history messages."""
    issue = {"role": "user", "content": "Fix the bug.", "message_type": "observation"}
    return json.dumps(
        {
            "trajectory": [],
            "history": [issue, *history],
            "info": info or {"exit_status": "submitted"},
        }
    ).encode()


def _call(action="run_tests tests/", call_id="call_1", arguments='{"path": "tests/"}'):
    return {
        "role": "assistant",
        "content": "Running the tests.",
        "thought": "Running the tests.",
        "action": action,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": action.split()[0], "arguments": arguments},
            }
        ],
    }


def _observation(content, call_id="call_1"):
    return {"role": "tool", "content": content, "tool_call_ids": [call_id]}


PYTEST_FAILED = (
    "============================= test session starts ==============================\n"
    "collected 14 items\n\ntests/test_funnel.py .............F\n\n"
    "=================================== FAILURES ===================================\n"
    "E       AssertionError: assert '1234' == '1235'\n"
    "FAILED tests/test_funnel.py::test_regression - AssertionError: assert '1234' == '1235'\n"
    "========================= 1 failed, 13 passed in 0.87s ========================="
)
PIP_FAILED = (
    "Installing test dependencies: pip install -r requirements-dev.txt\n"
    "WARNING: Retrying (Retry(total=4)) after connection broken: /simple/hypothesis/\n"
    "ERROR: Could not find a version that satisfies the requirement hypothesis\n"
    "ERROR: No matching distribution found for hypothesis"
)
PROMPT_LINES = "\n(Open file: n/a)\n(Current directory: /repo)\nbash-$"


def _result(content):
    (record,) = parse_bytes("swe_agent", _run(_call(), _observation(content)))
    result = record.steps[-1]
    assert result.kind == StepKind.TOOL_RESULT
    return result


@pytest.mark.parametrize(
    "content",
    [PYTEST_FAILED, PIP_FAILED, PIP_FAILED + "\nerror: pip install exited with status 1"],
)
def test_it_flags_an_observation_that_reports_a_failure(content):
    # A .traj has no exit code: 0 of 32 failing test runs of a trial were errors, while
    # OpenHands flagged the same outputs from theirs.
    assert _result(content).is_error is True


def test_it_reads_the_failure_above_the_lines_swe_agent_appends():
    assert _result(PYTEST_FAILED + PROMPT_LINES).is_error is True
    assert _result("Traceback (most recent call last):\n  File x\nKeyError: 'a'").is_error


@pytest.mark.parametrize(
    "content",
    [
        "AUTHORS.rst\nCHANGELOG.rst\nerrors.py\nsetup.py" + PROMPT_LINES,
        "==================== test session starts ====================\n"
        "collected 5 items\n\ntests/test_a.py .....\n\n"
        "==================== 5 passed in 0.12s ====================",
        "[File: app/errors.py (3 lines total)]\n1:class ParseError(Exception):\n"
        "2:    pass\n3:raise ParseError('error: bad input')" + PROMPT_LINES,
        "diff --git a/app.py b/app.py\n-    return value\n+    raise ValueError('error')",
        "Script completed successfully, no errors.",
        'No matches found for "error_handler" in /repo',
    ],
)
def test_it_does_not_flag_ordinary_output_that_mentions_an_error(content):
    assert _result(content).is_error is False


def test_the_samples_errors_are_their_three_tracebacks():
    errors = {}
    for relative in EXPECTED_STEPS:
        (record,) = parse_path("swe_agent", shared_file(relative))
        flagged = [s for s in record.steps if s.is_error]
        assert all(s.content.startswith("Traceback") for s in flagged)
        if flagged:
            errors[relative.rsplit("/", 1)[1]] = len(flagged)
    assert errors == {"pydicom__pydicom-1458.traj": 1, "BabyEncryption.traj": 2}


def _with(message, **fields):
    return {**message, **fields}


BAD_FIELDS = [
    # What a user trial's hand-broken files held; each was read without a word.
    (
        _run(_call(), _with(_observation("ok"), tool_call_ids="call_x")),
        validate.MSG_NOT_LIST,
        "history[2].tool_call_ids",
    ),
    (
        _run(_call(), _observation({"text": 5})),
        MSG_BAD_CONTENT,
        "history[2].content",
    ),
    (
        _run(_call(), _observation("ok"), exit_status="submitted", resolved="no"),
        validate.MSG_NOT_BOOL,
        "info.resolved",
    ),
    (
        _run(_call(arguments=12), _observation("ok")),
        MSG_BAD_ARGUMENTS,
        "history[1].tool_calls[0].function.arguments",
    ),
    (
        _run(_with(_call(), tool_calls=["run_tests"]), _observation("ok")),
        validate.MSG_NOT_OBJECT,
        "history[1].tool_calls[0]",
    ),
    (
        _run(_call(), _with(_observation("ok"), tool_call_ids=[7])),
        validate.MSG_NOT_STRING,
        "history[2].tool_call_ids[0]",
    ),
    (
        _run(_with(_call(), action=3), _observation("ok")),
        validate.MSG_NOT_STRING,
        "history[1].action",
    ),
    (_run(_with(_call(), thought=True), _observation("ok")), MSG_BAD_CONTENT, "history[1].thought"),
    (
        json.dumps({"trajectory": [{"action": "ls", "observation": {"out": 1}}]}).encode(),
        MSG_BAD_CONTENT,
        "trajectory[0].observation",
    ),
]


@pytest.mark.parametrize("data, message, field", BAD_FIELDS)
def test_it_rejects_a_field_of_the_wrong_type_naming_it(data, message, field):
    with pytest.raises(TraceParseError) as caught:
        parse_bytes("swe_agent", data)
    assert (caught.value.message, caught.value.record, caught.value.field) == (
        message,
        "document",
        field,
    )


def test_it_accepts_content_as_a_list_of_parts_and_ids_as_their_json_text():
    call = _with(_call(), content=[{"type": "text", "text": "Running the tests."}])
    result = _with(_observation([{"type": "text", "text": "5 passed"}]), tool_call_ids='["call_1"]')
    (record,) = parse_bytes("swe_agent", _run(call, result))
    assert [(s.kind, s.content, s.tool_call_id) for s in record.steps[-2:]] == [
        (StepKind.TOOL_CALL, "Running the tests.", "call_1"),
        (StepKind.TOOL_RESULT, "5 passed", "call_1"),
    ]
