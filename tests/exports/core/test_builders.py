from __future__ import annotations

import json

from exports.core.builders import (
    SKIP_AFTER_LABEL,
    SKIP_BAD_STEP,
    SKIP_NO_ACTION,
    SKIP_NO_CORRECTION,
    SKIP_NO_DECISIVE,
    SKIP_SAME_ACTION,
    SKIP_SIBLING_OFF_LABEL,
    Skip,
    diagnosis_example,
    preference_example,
    sft_example,
    start_state_examples,
    success_check,
)
from exports.core.inputs import (
    CorrectedTurn,
    CorrectionSource,
    Decisive,
    ExportRollout,
    Occurrence,
    ToolCall,
)
from exports.core.schemas import schema_problems
from exports.core.validate import chat_problems, leakage_problems
from tests.exports.core.factories import (
    EXECUTOR_PROMPT,
    PLANNER_PROMPT,
    VERIFIER_PROMPT,
    airline,
    multi_agent,
)

FIX = CorrectedTurn(
    step=5, tool_calls=(ToolCall("cancel", {"id": "GOOD"}),), author="ana", correction_id=9
)


def item(**kwargs):
    return ExportRollout(rollout_id=1, record=airline(), **kwargs)


def test_it_ends_the_sft_example_with_the_correction():
    example = sft_example(item(corrections=[FIX]))
    last = example["messages"][-1]
    assert last["role"] == "assistant" and "weight" not in last
    assert json.loads(last["tool_calls"][0]["function"]["arguments"]) == {"id": "GOOD"}
    assert example["metadata"]["correction"] == {
        "source": "human",
        "author": "ana",
        "source_rollout": None,
        "id": 9,
    }
    assert chat_problems(example["messages"], target_last=True) == []


def test_it_never_puts_the_decisive_step_in_the_prefix():
    example = sft_example(item(corrections=[FIX], decisive=Decisive(label_step=5)))
    assert example["metadata"]["step"] == 5
    assert leakage_problems(example["messages"][:-1], airline().steps, 5) == []


def test_it_skips_a_rollout_without_correction():
    assert sft_example(item()) == Skip(SKIP_NO_CORRECTION)


def test_it_skips_a_correction_after_the_labelled_step():
    late = CorrectedTurn(step=7, content="Anything else?")
    assert sft_example(item(corrections=[late], decisive=Decisive(label_step=5))) == Skip(
        SKIP_AFTER_LABEL
    )


def test_a_successful_trials_correction_before_the_label_is_no_correction_of_it():
    # Trials are matched by their tool calls only: where the successful one parts from
    # this rollout before the labelled step, its next call followed words this rollout
    # never had (a confirmation), so "chosen" would teach the labelled error itself.
    early = CorrectedTurn(
        step=2,
        tool_calls=(ToolCall("cancel", {"id": "GOOD"}),),
        source=CorrectionSource.SUCCESSFUL_ROLLOUT,
        source_rollout="s",
    )
    labelled = Decisive(label_step=5)
    assert sft_example(item(corrections=[early], decisive=labelled)) == Skip(SKIP_SIBLING_OFF_LABEL)
    assert preference_example(item(corrections=[early], decisive=labelled)) == Skip(
        SKIP_SIBLING_OFF_LABEL
    )
    # At the labelled step it corrects it; a person's correction before it stays theirs.
    at_label = CorrectedTurn(
        step=5,
        tool_calls=(ToolCall("cancel", {"id": "GOOD"}),),
        source=CorrectionSource.SUCCESSFUL_ROLLOUT,
        source_rollout="s",
    )
    assert sft_example(item(corrections=[at_label], decisive=labelled))["metadata"]["step"] == 5
    human_early = CorrectedTurn(step=2, content="Which reservation should I cancel?", author="ana")
    assert sft_example(item(corrections=[human_early], decisive=labelled))["metadata"]["step"] == 2
    # Without a label, the trials' parting is all there is to go by.
    assert sft_example(item(corrections=[early]))["metadata"]["step"] == 2


def test_it_skips_a_correction_on_a_tool_result():
    on_result = CorrectedTurn(step=6, content="x")
    assert sft_example(item(corrections=[on_result])) == Skip(SKIP_BAD_STEP)


def test_it_skips_a_correction_equal_to_the_original():
    same = CorrectedTurn(step=5, tool_calls=(ToolCall("cancel", {"id": "WRONG"}),))
    assert sft_example(item(corrections=[same])) == Skip(SKIP_SAME_ACTION)


def test_it_prefers_a_human_correction():
    machine = CorrectedTurn(
        step=5, content="m", source=CorrectionSource.SUCCESSFUL_ROLLOUT, source_rollout="s"
    )
    example = sft_example(item(corrections=[machine, FIX]))
    assert example["metadata"]["correction"]["source"] == "human"


def test_it_pairs_the_correction_with_the_original_action():
    example = preference_example(item(corrections=[FIX]))
    assert json.loads(example["chosen"][0]["tool_calls"][0]["function"]["arguments"]) == {
        "id": "GOOD"
    }
    assert json.loads(example["rejected"][0]["tool_calls"][0]["function"]["arguments"]) == {
        "id": "WRONG"
    }
    assert all("weight" not in m for m in example["prompt"])
    assert example["prompt"] == [
        {k: v for k, v in m.items() if k != "weight"}
        for m in sft_example(item(corrections=[FIX]))["messages"][:-1]
    ]


def test_it_diagnoses_from_the_label_first():
    decisive = Decisive(
        label_step=5,
        label_agent="assistant",
        label_reason="wrong id",
        label_source="human",
        lo=4,
        hi=6,
        point_step=6,
        rollback_step=4,
        alpha=0.1,
    )
    example = diagnosis_example(
        item(decisive=decisive, occurrences=[Occurrence(5, 3, "cancels the wrong trip")])
    )
    assert example["output"] == {
        "decisive_set": {"lo": 4, "hi": 6},
        "step": 5,
        "agent": "assistant",
        "misbehaviour": {"id": 3, "name": "cancels the wrong trip", "category": None, "step": 5},
        "reason": "wrong id",
        "source": "label",
    }
    assert json.loads(example["messages"][2]["content"]) == example["output"]


def test_it_diagnoses_from_the_attribution_without_label():
    decisive = Decisive(lo=4, hi=6, point_step=5, rollback_step=4, alpha=0.1)
    example = diagnosis_example(item(decisive=decisive))
    assert (
        example["output"]["step"],
        example["output"]["source"],
        example["output"]["reason"],
    ) == (5, "attribution", "")


def test_an_attribution_record_names_its_steps_agent_and_where_its_misbehaviour_was_seen():
    # A trial's record paired a writer's step with the agent of most probability (another
    # one), and the set's misbehaviour was seen at another step: the record pairs the step
    # with its own agent and says where the misbehaviour was.
    decisive = Decisive(lo=3, hi=6, point_step=5, rollback_step=3, alpha=0.1)
    record = item(decisive=decisive, occurrences=[Occurrence(4, 3, "cancels the wrong trip")])
    example = diagnosis_example(record)
    assert example["output"]["agent"] == record.record.steps[5].agent != "x"
    assert example["output"]["misbehaviour"]["step"] == 4
    assert schema_problems("diagnosis", example) == []


def test_it_windows_the_diagnosis_input():
    decisive = Decisive(lo=4, hi=5, point_step=5, rollback_step=4)
    example = diagnosis_example(item(decisive=decisive), window=1)
    assert example["input"]["window"] == {"start": 3, "stop": 7, "total_steps": 8}
    assert [s["index"] for s in example["input"]["steps"]] == [3, 4, 5, 6]


def test_it_skips_diagnosis_without_label_or_attribution():
    assert diagnosis_example(item()) == Skip(SKIP_NO_DECISIVE)


def test_it_makes_a_start_state_per_chosen_occurrence():
    occurrences = [Occurrence(5, 3, "cancels the wrong trip"), Occurrence(7, 4, "brags")]
    states = list(start_state_examples(item(occurrences=occurrences), [3]))
    assert len(states) == 1
    state = states[0]
    assert state["avoid"]["misbehaviour"]["name"] == "cancels the wrong trip"
    assert state["success_check"]["kind"] == "tau_bench_actions"
    assert chat_problems(state["messages"], target_last=False) == []
    assert leakage_problems(state["messages"], airline().steps, 5) == []


def test_it_reads_an_expected_answer_as_the_success_check():
    record = airline()
    record.metadata = {"ground_truth": "Paris"}
    assert success_check(record) == {"kind": "expected_answer", "answer": "Paris"}


def test_it_starts_only_where_a_misbehaviour_first_shows():
    occurrences = [Occurrence(5, 3, "wrong trip"), Occurrence(7, 3, "wrong trip")]
    states = list(start_state_examples(item(occurrences=occurrences)))
    assert [s["avoid"]["step"] for s in states] == [5]


def test_it_ends_a_start_state_before_the_action_behind_a_tool_result():
    states = list(start_state_examples(item(occurrences=[Occurrence(6, 3, "error")])))
    assert states[0]["metadata"]["step"] == 5 and states[0]["avoid"]["step"] == 6
    assert chat_problems(states[0]["messages"], target_last=False) == []


def test_it_skips_an_occurrence_with_no_action_before_it():
    states = list(
        start_state_examples(item(occurrences=[Occurrence(1, 3, "x"), Occurrence(2, 3, "x")]))
    )
    assert states[0] == Skip(SKIP_NO_ACTION) and states[1]["avoid"]["step"] == 2


BOOK_CHEAPEST = CorrectedTurn(step=7, tool_calls=(ToolCall("book_flight", {"flight": "DL7"}),))


def test_a_multi_agent_sft_example_is_written_from_the_corrected_agents_view():
    record = multi_agent()
    example = sft_example(ExportRollout(1, record, corrections=[BOOK_CHEAPEST]))
    messages = example["messages"]
    assert example["metadata"]["agent"] == "executor" and example["metadata"]["step"] == 7
    assert messages[0] == {"role": "system", "content": EXECUTOR_PROMPT}
    assert [m for m in messages if m["role"] == "system"] == [messages[0]]
    assert all(PLANNER_PROMPT not in (m["content"] or "") for m in messages)
    assert {"role": "user", "content": record.steps[2].content, "name": "planner"} in messages
    assert chat_problems(messages, target_last=True) == []
    assert leakage_problems(messages[:-1], record.steps, 7, task_text=record.task_text) == []


def test_a_multi_agent_preference_pair_has_the_same_point_of_view():
    item = ExportRollout(1, multi_agent(), corrections=[BOOK_CHEAPEST])
    example = preference_example(item)
    assert example["prompt"] == [
        {k: v for k, v in m.items() if k != "weight"} for m in sft_example(item)["messages"][:-1]
    ]
    assert example["prompt"][0] == {"role": "system", "content": EXECUTOR_PROMPT}
    assert example["rejected"][0]["tool_calls"][0]["function"]["arguments"] == '{"flight": "UA2"}'


def test_a_multi_agent_start_state_opens_with_the_acting_agents_prompt():
    item = ExportRollout(1, multi_agent(), occurrences=[Occurrence(10, 4, "waves it through")])
    [example] = start_state_examples(item)
    assert example["metadata"]["agent"] == "verifier"
    assert example["messages"][0] == {"role": "system", "content": VERIFIER_PROMPT}
    assert {m["role"] for m in example["messages"][1:]} == {"user"}
    assert chat_problems(example["messages"], target_last=False) == []


def _span_shaped():
    """The airline rollout as a span format writes it: the model call's words are a
    message step announcing its call, and the call a step of its own with no words."""
    from ingest.core.records import StepRecord

    record = airline()
    steps = list(record.steps)
    cancel = steps[5]
    thought = StepRecord(
        index=5, role="assistant", kind="message", agent="assistant",
        content="I'll cancel WRONG, the first one listed.",
        metadata={"tool_calls": [{"id": cancel.tool_call_id, "type": "function"}]},
    )  # fmt: skip
    cancel.metadata = {}
    steps.insert(5, thought)
    for position, step in enumerate(steps):
        step.index = position
    record.steps = steps
    return record


def test_a_correction_at_a_call_replaces_the_words_that_announced_it():
    # A trial's Langfuse rollouts kept the agent's wrong reasoning ("I'll type it into the
    # search box [14801]") as the prompt's last message, right before the corrected call.
    record = _span_shaped()
    fix = CorrectedTurn(step=6, tool_calls=(ToolCall("cancel", {"id": "GOOD"}),), author="ana")
    example = preference_example(ExportRollout(1, record, corrections=[fix]))
    assert all("first one listed" not in (m.get("content") or "") for m in example["prompt"])
    rejected = example["rejected"][0]
    assert rejected["content"] == "I'll cancel WRONG, the first one listed."
    assert [c["function"]["name"] for c in rejected["tool_calls"]] == ["cancel"]
    assert example["metadata"]["step"] == 5  # the turn starts at the words
    sft = sft_example(ExportRollout(1, record, corrections=[fix]))
    assert chat_problems(sft["messages"], target_last=True) == []


def test_words_announcing_a_call_are_one_assistant_message_in_a_prefix():
    record = _span_shaped()
    record.steps[-1].content = "Done."
    fix = CorrectedTurn(step=8, content="WRONG is cancelled; GOOD is still booked.")
    example = sft_example(ExportRollout(1, record, corrections=[fix]))
    calls = [m for m in example["messages"] if m.get("tool_calls")]
    assert calls[-1]["content"] == "I'll cancel WRONG, the first one listed."
    assert chat_problems(example["messages"], target_last=True) == []
