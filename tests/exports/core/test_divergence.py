from __future__ import annotations

from exports.core.divergence import divergence_correction, shared_calls
from exports.core.inputs import CorrectionSource
from tests.exports.core.factories import airline


def test_it_takes_the_successful_action_at_the_divergence_point():
    failed = airline("f", cancel="WRONG")
    success = airline("s", outcome="success", cancel="GOOD")
    correction = divergence_correction(failed, [success])
    assert correction is not None
    assert correction.step == 5
    assert correction.tool_calls[0].name == "cancel"
    assert correction.tool_calls[0].arguments == {"id": "GOOD"}
    assert correction.source == CorrectionSource.SUCCESSFUL_ROLLOUT
    assert correction.source_rollout == "s"


def test_it_ignores_other_tasks():
    failed = airline("f")
    success = airline("s", task_id="airline/2", outcome="success", cancel="GOOD")
    assert divergence_correction(failed, [success]) is None


def test_it_finds_nothing_when_the_calls_are_the_same():
    failed = airline("f")
    assert divergence_correction(failed, [airline("s", outcome="success")]) is None


def test_it_prefers_the_longest_shared_prefix_then_the_first_id():
    failed = airline("f")
    early = airline("a", outcome="success")
    early.steps[2].tool_args = {"user_id": "someone"}
    late_b = airline("c", outcome="success", cancel="B")
    late_a = airline("b", outcome="success", cancel="A")
    assert shared_calls(failed, early) == 0
    correction = divergence_correction(failed, [early, late_b, late_a])
    assert correction is not None and correction.source_rollout == "b"


def test_no_correction_from_a_call_that_failed_in_the_successful_rollout():
    # A chosen action must not be one that drew an error where it was taken: a trial's
    # preference pair preferred code that raised a NameError to the failed run's own.
    failed = airline("f", cancel="WRONG")
    success = airline("s", outcome="success", cancel="GOOD")
    success.steps[6].is_error = True
    assert divergence_correction(failed, [success]) is None


def test_no_correction_that_copies_a_value_the_failed_rollout_never_saw():
    # The sibling's lookup found OTHER; the failed rollout saw only GOOD and WRONG: a model
    # taught to send OTHER there would learn to make the value up.
    failed = airline("f", cancel="WRONG")
    success = airline("s", outcome="success", cancel="OTHER1")
    assert divergence_correction(failed, [success]) is None
    # A value it had read (the lookup listed GOOD) is a correction it could have made.
    assert divergence_correction(failed, [airline("s", outcome="success", cancel="GOOD")])
