from __future__ import annotations

from analysis.core.selection import RolloutFacts, wrong_steps
from analysis.core.steps import CONTENT_CHARS, Source, WrongStep, step_text, truncate
from ingest.core.records import StepRecord


def test_it_truncates_long_content_keeping_head_and_tail():
    text = step_text(WrongStep(key="1", rollout="r", index=0, content="x" * 5000 + "TERMINATE"))
    assert len(text) < CONTENT_CHARS + 50
    assert text.endswith("TERMINATE")


def test_it_strips_ansi_codes_and_collapses_spaces():
    text = step_text(
        WrongStep(key="1", rollout="r", index=0, role="tool", content="\x1b[31mred\x1b[0m\n\n x")
    )
    assert "\x1b" not in text and "red x" in text


def test_it_keeps_short_text_whole():
    assert truncate("abc", 10) == "abc"


def rollout_steps():
    return [
        StepRecord(index=0, role="system", kind="system", content="policy"),
        StepRecord(index=1, role="user", content="cancel my trip"),
        StepRecord(index=2, role="assistant", content="Sure, let me look."),
        StepRecord(
            index=3,
            role="assistant",
            kind="tool_call",
            tool_name="cancel_reservation",
            tool_call_id="c1",
            tool_args={"reservation_id": "ABC"},
        ),
        StepRecord(
            index=4,
            role="tool",
            kind="tool_result",
            tool_call_id="c1",
            content="Error: cannot cancel",
            is_error=True,
        ),
        StepRecord(index=5, role="assistant", content="Done!"),
    ]


def test_it_picks_labels_conformal_sets_and_error_calls():
    rollout = RolloutFacts(key="r", failed=True)
    # A set gives its most probable agent action, and the signalled actions it holds,
    # sharing one decisive error between them.
    chosen = wrong_steps(rollout, rollout_steps(), conformal={2: 0.3, 3: 0.5})
    assert [(s.index, s.source, s.weight) for s in chosen] == [(3, Source.CONFORMAL, 1.0)]
    signalled = wrong_steps(
        rollout, rollout_steps(), conformal={2: 0.3, 3: 0.5}, signalled={2: 0.3, 5: 0.1}
    )
    assert [(s.index, s.source, round(s.weight, 3)) for s in signalled] == [
        (2, Source.CONFORMAL, 0.375),
        (3, Source.CONFORMAL, 0.625),
    ]
    labelled = wrong_steps(rollout, rollout_steps(), labelled=[5])
    assert [(s.index, s.source) for s in labelled] == [(3, Source.ERROR), (5, Source.LABEL)]
    error_only = wrong_steps(rollout, rollout_steps())
    assert [(s.index, s.source, s.after) for s in error_only] == [
        (3, Source.ERROR, "Error: cannot cancel")
    ]


def test_a_label_makes_the_conformal_set_moot():
    # The label says which step was decisive: the set's other steps are not the error.
    rollout = RolloutFacts(key="r", failed=True)
    chosen = wrong_steps(rollout, rollout_steps(), labelled=[5], conformal={2: 0.3, 3: 0.5})
    assert [(s.index, s.source, s.weight) for s in chosen] == [
        (3, Source.ERROR, 1.0),
        (5, Source.LABEL, 1.0),
    ]
    # A label past the rollout's end is no label: the set is used.
    beyond = wrong_steps(rollout, rollout_steps(), labelled=[40], conformal={2: 0.3})
    assert [(s.index, s.source) for s in beyond] == [(2, Source.CONFORMAL), (3, Source.ERROR)]


def test_a_label_on_a_step_no_agent_took_is_no_misbehaviour():
    # The customer's message labelled decisive (from the keyboard, say) joined a group
    # chat's "An expert writes a message"; it says where the rollout went wrong, and the
    # set and signals stay moot, but only the error call is an agent's misbehaviour.
    rollout = RolloutFacts(key="r", failed=True)
    for labelled in ([1], [0], [4]):
        chosen = wrong_steps(
            rollout, rollout_steps(), labelled=labelled, conformal={2: 0.5}, signalled={5: 1.0}
        )
        assert [(s.index, s.source) for s in chosen] == [(3, Source.ERROR)], labelled


def test_a_rollout_with_neither_label_nor_set_gives_its_signalled_actions():
    rollout = RolloutFacts(key="r", failed=True)
    chosen = wrong_steps(rollout, rollout_steps(), signalled={1: 1.0, 5: 1.0})
    # Step 1 is the user's turn, not an agent action: only step 5 joins the error call.
    assert [(s.index, s.source, s.weight) for s in chosen] == [
        (3, Source.ERROR, 1.0),
        (5, Source.SIGNAL, 1.0),
    ]
    # Several candidates share one decisive error between them, by the scorer's ranking.
    shared = wrong_steps(rollout, rollout_steps(), signalled={2: 1.0, 5: 1.0})
    assert [(s.index, s.weight) for s in shared] == [(2, 0.5), (3, 1.0), (5, 0.5)]
    ranked = wrong_steps(rollout, rollout_steps(), signalled={2: 0.6, 5: 0.2})
    assert [(s.index, round(s.weight, 2)) for s in ranked] == [(2, 0.75), (3, 1.0), (5, 0.25)]


def test_a_label_or_a_set_makes_the_signalled_actions_moot():
    rollout = RolloutFacts(key="r", failed=True)
    labelled = wrong_steps(rollout, rollout_steps(), labelled=[2], signalled={5: 1.0})
    assert [(s.index, s.source) for s in labelled] == [(2, Source.LABEL), (3, Source.ERROR)]
    in_set = wrong_steps(rollout, rollout_steps(), conformal={2: 0.6}, signalled={5: 1.0})
    assert [(s.index, s.source) for s in in_set] == [(2, Source.CONFORMAL), (3, Source.ERROR)]


def test_it_takes_every_agent_action_with_the_switch_and_nothing_from_successes():
    steps = rollout_steps()
    chosen = wrong_steps(RolloutFacts(key="r", failed=True), steps, all_failed_steps=True)
    assert [s.index for s in chosen] == [2, 3, 5]
    assert wrong_steps(RolloutFacts(key="r", failed=False), steps, labelled=[5]) == []


def test_a_set_of_the_whole_rollout_does_not_make_every_action_wrong():
    """A set calibrated on few labels can hold nearly every step: its plain actions are not
    misbehaviours. It gives the scorer's pick and the signalled actions it holds."""
    rollout = RolloutFacts(key="r", failed=True)
    whole_set = {0: 0.3, 1: 0.1, 2: 0.1, 3: 0.1, 4: 0.1, 5: 0.2}
    chosen = wrong_steps(rollout, rollout_steps(), conformal=whole_set)
    # Not the system prompt (0, the most probable step): the most probable agent action.
    assert [(s.index, s.source) for s in chosen] == [(3, Source.ERROR), (5, Source.CONFORMAL)]
    with_signal = wrong_steps(rollout, rollout_steps(), conformal=whole_set, signalled={2: 0.1})
    assert [(s.index, s.source, round(s.weight, 2)) for s in with_signal] == [
        (2, Source.CONFORMAL, 0.33),
        (3, Source.ERROR, 1.0),
        (5, Source.CONFORMAL, 0.67),
    ]
    # A label on an agent action is kept whatever its signals: a human said it was
    # decisive (one on a step no agent took is no misbehaviour, the test above).
    labelled = wrong_steps(rollout, rollout_steps(), labelled=[2])
    assert [(s.index, s.source) for s in labelled] == [(2, Source.LABEL), (3, Source.ERROR)]


def test_other_agents_messages_in_a_group_chat_are_agent_actions():
    steps = [
        StepRecord(index=0, role="user", agent="human", content="find the paper"),
        StepRecord(index=1, role="assistant", agent="WebSurfer", content="I typed 'paper'"),
        StepRecord(index=2, role="user", agent="Verification_Expert", content="verified"),
    ]
    chosen = wrong_steps(RolloutFacts(key="r", failed=True), steps, all_failed_steps=True)
    assert [s.index for s in chosen] == [1, 2]


def test_cuts_fall_between_words_so_no_fragment_reaches_a_name():
    args = "cabin=economy, flights=HAT030 HAT223, payment_id=gift_card_8190876"
    cut = truncate(args, 40)
    assert cut == "cabin=economy, flights=HAT030 … payment_id=gift_card_8190876"
    words = set(args.split())
    assert all(word in words for word in cut.replace(" … ", " ").split())
