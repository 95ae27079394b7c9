"""Sibling divergence: where a failed trial leaves a successful trial of the same task."""

from __future__ import annotations

import pytest

from attribution.core.label_sources import KIND_DIVERGENCE, SOURCE_SIBLING_DIVERGENCE
from attribution.core.sibling_divergence import (
    call_failures,
    sibling_divergence,
    sibling_divergence_label,
)
from tests.attribution.core.test_label_sources import ASK, LOOKUP, TAU_AIRLINE, _rollout


def test_it_labels_where_a_failed_trial_leaves_a_successful_one():
    shared = ("call", "get_user_details", {"user_id": "mia_1"}, "{}")
    failed = _rollout(
        ASK, shared, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "X"}, "ok")
    )
    won = _rollout(
        ("user", "Cancel ABC123 please, it is for my trip."),  # worded differently
        shared,
        LOOKUP,
        ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"),
        name="s",
    )
    label = sibling_divergence_label(failed, [won])
    assert (label.step, label.kind, label.source) == (6, KIND_DIVERGENCE, SOURCE_SIBLING_DIVERGENCE)
    assert sibling_divergence(failed, [won]).sibling_step == 6


def test_it_gives_no_sibling_label_without_a_shared_prefix():
    failed = _rollout(ASK, ("call", "cancel_reservation", {"reservation_id": "X"}, "ok"))
    won = _rollout(ASK, LOOKUP, name="s")
    assert sibling_divergence_label(failed, [won]) is None
    # The repair exports' rule accepts a divergence at the first call.
    assert sibling_divergence(failed, [won], min_shared_calls=0, need_sibling_action=True)


def test_it_only_compares_trials_of_the_same_task():
    failed = _rollout(ASK, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "X"}, "ok"))
    other = _rollout(ASK, LOOKUP, LOOKUP, task="airline/2", name="s")
    assert sibling_divergence_label(failed, [other]) is None


def test_it_gives_no_sibling_label_when_the_failed_trial_stops_calling_tools():
    failed = _rollout(ASK, LOOKUP, ("assistant", "I cannot cancel it."))
    won = _rollout(ASK, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "A"}, "ok"))
    assert sibling_divergence_label(failed, [won]) is None


def test_it_picks_the_longest_shared_prefix_whatever_the_order():
    cancel = ("call", "cancel_reservation", {"reservation_id": "X"}, "ok")
    other = ("call", "get_user_details", {"user_id": "u"}, "{}")
    failed = _rollout(ASK, LOOKUP, other, cancel)
    short = _rollout(ASK, LOOKUP, LOOKUP, name="a")
    long = _rollout(ASK, LOOKUP, other, LOOKUP, name="b")
    for order in ([short, long], [long, short]):
        assert sibling_divergence(failed, order).sibling_id == "b"


def test_it_compares_prose_arguments_when_asked_as_the_exports_did():
    failed = _rollout(
        ASK, ("call", "transfer_to_human_agents", {"summary": "wants a refund now please"}, "ok")
    )
    won = _rollout(
        ASK,
        ("call", "transfer_to_human_agents", {"summary": "refund is what the user wants"}, "ok"),
        name="s",
    )
    assert sibling_divergence(failed, [won], min_shared_calls=0, need_sibling_action=True) is None
    exact = sibling_divergence(
        failed, [won], min_shared_calls=0, need_sibling_action=True, mask_prose=False
    )
    assert exact is not None and exact.failed_step == 2


def test_it_finds_the_divergence_points_of_the_repair_exports_on_airline():
    from ingest.parsers import tau_bench

    if not TAU_AIRLINE.exists():
        pytest.skip("tau-bench data not present")
    with TAU_AIRLINE.open("rb") as stream:
        records = list(tau_bench.parse(stream, filename=TAU_AIRLINE.name))
    successes = [r for r in records if r.outcome == "success"]
    found = [
        sibling_divergence(
            r, successes, min_shared_calls=0, need_sibling_action=True, mask_prose=False
        )
        for r in records
        if r.outcome == "failure"
    ]
    # Measured once against exports/core/divergence.py: 41 divergences, the same step and
    # sibling for each of the 116 failures; 40 since a trial where the same call failed in
    # one of the two only is no sibling; 41 since a call id an agent reused is paired with
    # its own result (8 rollouts reuse one: a search's id read the later update's error);
    # 38 since a sibling sharing no call must reach its first call after as many user
    # turns (3 of the 4 sharing none did not).
    assert sum(d is not None for d in found) == 38


def test_a_trial_whose_same_call_failed_only_there_is_no_sibling():
    # The lookup failed in the failed trial only: what each agent did next answers a
    # different state, so neither a label nor an export's correction comes from there.
    broken = ("call", "get_reservation_details", {"reservation_id": "ABC123"}, "Error: timeout")
    failed = _rollout(
        ASK, broken, ("assistant", "It is cancelled."), ("call", "send_summary", {}, "ok")
    )
    won = _rollout(
        ASK, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"), name="s"
    )
    assert sibling_divergence_label(failed, [won]) is None
    assert sibling_divergence(failed, [won], min_shared_calls=0, need_sibling_action=True) is None
    # With the same outcome the same trials diverge at the call after the lookup.
    healthy = _rollout(ASK, LOOKUP, ("call", "send_summary", {}, "ok"))
    assert sibling_divergence_label(healthy, [won]).step == 4


def test_a_query_worded_differently_that_failed_only_there_is_the_divergence():
    # Prose arguments (a SQL query) are masked when calls are compared, so two different
    # queries looked alike; one failing where the other did not is the agents parting.
    tables = ("call", "list_tables", {}, "orders, customers")
    broken = ("call", "run_sql", {"sql": "SELECT region , SUM ( total ) FROM orders"},
              "Error: no such column: region")  # fmt: skip
    working = ("call", "run_sql", {"sql": "SELECT c.region, SUM(o.total) FROM orders o JOIN"},
               "north 120\nsouth 80")  # fmt: skip
    failed = _rollout(ASK, tables, broken, broken, ("assistant", "Revenue is 200."))
    won = _rollout(ASK, tables, working, ("assistant", "North 120, south 80."), name="s")
    assert sibling_divergence_label(failed, [won]).step == 4
    # Worded alike and failed in one trial only: still the environments parting.
    flaky = _rollout(ASK, tables, (*working[:3], "Error: timeout"), ("assistant", "Sorry."))
    assert sibling_divergence_label(flaky, [won]) is None
    # Worded differently with the same outcome: no divergence at that call.
    reworded = ("call", "run_sql", {"sql": "SELECT region, SUM(total) FROM sales GROUP BY 1"},
                "north 120\nsouth 80")  # fmt: skip
    later = _rollout(ASK, tables, reworded, ("call", "plot_chart", {"kind": "bar"}, "ok"))
    assert sibling_divergence_label(later, [won]).step == 6


def test_a_reused_call_id_is_paired_with_each_call_s_own_result():
    from ingest.core.records import StepRecord as S
    from ingest.core.records import TrajectoryRecord as T

    steps = [
        S(0, "assistant", "tool_call", tool_name="search", tool_call_id="c1"),
        S(1, "tool", "tool_result", tool_name="search", tool_call_id="c1", content="[]"),
        S(2, "assistant", "tool_call", tool_name="update", tool_call_id="c1"),
        S(3, "tool", "tool_result", tool_call_id="c1", content="Error: no", is_error=True),
        S(4, "assistant", "tool_call", tool_name="think"),
        S(5, "tool", "tool_result", content="Error: again", is_error=True),
    ]
    assert call_failures(T("r", steps=steps)) == [False, True, True]


def test_a_sibling_sharing_no_call_must_be_at_the_same_user_turn():
    from ingest.core.records import StepRecord as S
    from ingest.core.records import TrajectoryRecord as T

    def trial(rollout_id, turns, reservation):
        steps = [S(i, "user", "message", content=f"turn {i}") for i in range(turns)]
        call = S(turns, "assistant", "tool_call", tool_name="cancel", tool_args=reservation)
        return T(rollout_id, task_id="1", steps=[*steps, call])

    options = {"min_shared_calls": 0, "need_sibling_action": True, "mask_prose": False}
    failed = trial("f", 2, {"id": "A"})
    assert sibling_divergence(failed, [trial("s", 2, {"id": "B"})], **options) is not None
    # Its first call answered an earlier turn than the failed one's: no correction.
    assert sibling_divergence(failed, [trial("s", 1, {"id": "B"})], **options) is None


def _crew(rollout_id, *steps):
    """A crew's rollout of task 1: ``(agent, kind, content or (tool, args, error))``."""
    from ingest.core.records import StepRecord as S
    from ingest.core.records import TrajectoryRecord as T

    made = [S(0, "user", "message", content="What was the median growth?")]
    for agent, kind, body in steps:
        if kind == "call":
            tool, args, error = body
            made.append(S(len(made), "assistant", "tool_call", agent=agent, tool_name=tool,
                          tool_args=args))  # fmt: skip
            made.append(S(len(made), "tool", "tool_result", content="Traceback" if error else "4.2",
                          is_error=error))  # fmt: skip
        else:
            made.append(S(len(made), "assistant", "message", agent=agent, content=body))
    return T(rollout_id, task_id="1", steps=made)


CODE = ("run_python", {"code": "median(x)"}, True)
FIXED = ("run_python", {"code": "statistics.median(x)"}, False)
SAVE = ("save_report", {"body": "-5.8%"}, False)


def test_in_a_crew_the_divergence_is_the_agent_s_own_step_not_a_later_agent_s_call():
    # Both analysts' code raised; the successful one fixed it, the failed one reported a
    # figure anyway, and the writer's save_report that follows is downstream of that.
    failed = _crew(
        "f", ("analyst", "call", CODE), ("analyst", "message", "The median is -5.8%."),
        ("writer", "call", SAVE),
    )  # fmt: skip
    won = _crew(
        "s", ("analyst", "call", CODE), ("analyst", "call", FIXED), ("writer", "call", SAVE)
    )
    assert sibling_divergence_label(failed, [won]).step == 3  # the analyst's report
    # The same agent at both calls: the failed rollout's call, as before.
    same = _crew("g", ("analyst", "call", CODE), ("analyst", "call", SAVE))
    assert sibling_divergence_label(same, [won]).step == 3
    assert same.steps[3].kind == "tool_call"


def test_in_a_crew_no_divergence_when_the_sibling_s_agent_never_acted_there():
    # The work went to another agent: no step of the failed rollout stands for the
    # sibling's call.
    failed = _crew("f", ("analyst", "call", CODE), ("writer", "call", SAVE))
    won = _crew(
        "s", ("analyst", "call", CODE), ("analyst", "call", FIXED), ("writer", "call", SAVE)
    )
    assert sibling_divergence_label(failed, [won]) is None


def test_one_agent_named_differently_by_two_formats_is_one_agent():
    # A chat file calls the agent "assistant", its OpenTelemetry trace by its name.
    failed = _rollout(ASK, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "X"}, "ok"))
    won = _rollout(
        ASK, LOOKUP, ("call", "cancel_reservation", {"reservation_id": "ABC123"}, "ok"), name="s"
    )
    for step in won.steps:
        if step.role == "assistant":
            step.agent = "travel-concierge"
    assert sibling_divergence_label(failed, [won]).step == 4
