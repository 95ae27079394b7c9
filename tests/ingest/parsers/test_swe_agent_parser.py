"""SWE-agent .traj files: exact counts on all 22 samples, old and new layouts, outcome rule."""

from __future__ import annotations

import json

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.records import Outcome, StepKind
from ingest.parsers.swe_agent import MSG_NO_STEPS
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
