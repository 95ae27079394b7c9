from __future__ import annotations

import numpy as np

from analysis.core.profiles import (
    describe_clusters,
    failure_lift,
    misbehaviour_name,
)
from analysis.core.steps import WrongStep


def step(key, rollout, tool, content, env="airline", task="t1", weight=1.0):
    return WrongStep(
        key=key,
        rollout=rollout,
        index=0,
        role="assistant",
        kind="tool_call",
        tool_name=tool,
        content=content,
        environment=env,
        task=task,
        weight=weight,
    )


def test_it_names_a_cluster_by_its_action_and_distinctive_words():
    steps = [
        step("1", "r1", "book_reservation", "gift card balance is not enough", task="t1"),
        step("2", "r2", "book_reservation", "gift card balance too low", task="t2"),
        step("3", "r3", "book_reservation", "paid with gift card, balance short", task="t3"),
        step(
            "4", "r4", "search_direct_flight", "the direct flight on that date is full", task="t1"
        ),
        step("5", "r5", "search_direct_flight", "direct flight search date wrong", task="t2"),
    ]
    labels = np.array([0, 0, 0, 1, 1])
    profiles = describe_clusters(steps, labels, np.ones(5))
    assert profiles[0].name == "Calls book_reservation (“gift card”)"
    assert profiles[1].name == "Calls search_direct_flight (“direct flight”)"
    assert profiles[0].generalises and not profiles[1].generalises
    assert profiles[0].tasks == 3


def test_it_falls_back_to_words_when_no_action_dominates():
    assert misbehaviour_name("WebSurfer message", 0.4, ["pdf", "download"]) == "pdf, download"


def test_it_weights_shares_and_measures_lift():
    steps = [
        step("1", "r1", "book_reservation", "x", weight=1.0),
        step("2", "r2", "book_reservation", "x", weight=0.5),
        step("3", "r3", "get_user", "y", weight=0.5),
    ]
    rollout_failed = {"r1": True, "r2": True, "r3": True, "s1": False, "s2": False, "s3": False}
    profiles = describe_clusters(
        steps,
        np.array([0, 0, -1]),
        np.ones(3),
        assigned_success=[("s1", 0), ("s2", -1)],
        rollout_failed=rollout_failed,
    )
    assert profiles[0].share == 0.75
    # 2 of the 3 rollouts containing it failed; half of all rollouts failed.
    assert profiles[0].lift == round((2 / 3) / 0.5, 4)
    assert failure_lift(failed=1, total=1, base_rate=1.0) is None


def test_it_claims_no_lift_for_failures_only_in_all_failed_environments():
    # Its failing members are all in GAIA, where every rollout failed; a success of the
    # airline environment assigned to it must not make its lift 0.
    steps = [step(str(i), f"g{i}", "", "searches the web", env="GAIA") for i in range(3)]
    rollout_failed = {"g0": True, "g1": True, "g2": True, "a1": True, "s1": False}
    profiles = describe_clusters(
        steps,
        np.zeros(3, dtype=int),
        np.ones(3),
        assigned_success=[("s1", 0)],
        rollout_failed=rollout_failed,
        rollout_length={"g0": 5, "g1": 6, "g2": 7, "a1": 9, "s1": 4},
        rollout_group={"g0": "GAIA", "g1": "GAIA", "g2": "GAIA", "a1": "airline", "s1": "airline"},
    )
    assert (profiles[0].lift, profiles[0].lift_unadjusted, profiles[0].lift_adjusted) == (
        None,
        None,
        None,
    )


def test_a_step_type_at_low_probability_in_every_task_does_not_generalise():
    # The same routine step in the prediction sets of 20 tasks, each at probability 0.1:
    # it touches every task but is the likely error in none.
    routine = [
        step(str(i), f"r{i}", "search", "looks up the flights", task=f"t{i}", weight=0.1)
        for i in range(20)
    ]
    # A labelled wrong call (weight 1) in 5 of the same 20 tasks.
    labelled = [
        step(f"l{i}", f"r{i}", "book_reservation", "books with the wrong card", task=f"t{i}")
        for i in range(5)
    ]
    profiles = describe_clusters(routine + labelled, np.array([0] * 20 + [1] * 5), np.ones(25))
    assert profiles[0].tasks == 20 and profiles[0].recurs["tasks"] == 0
    assert not profiles[0].generalises
    assert profiles[1].recurs == {"environments": 1, "tasks": 5, "policy_models": 0}
    # 5 of the environment's 20 tasks is more than a tenth: it generalises.
    assert profiles[1].generalises


def test_set_steps_that_add_up_to_half_a_step_recur():
    steps = [
        step(f"{task}{i}", f"r{task}", "search", "looks up the flights", task=task, weight=0.25)
        for task in ("a", "b", "c")
        for i in range(2)
    ]
    profiles = describe_clusters(steps, np.zeros(6, dtype=np.int64), np.ones(6))
    assert profiles[0].recurs["tasks"] == 3
    assert profiles[0].generalises


def test_it_shows_an_action_pattern_only_when_most_members_follow_it():
    tools = ["book_reservation"] * 3 + ["get_user", "cancel", "search", "update"]
    steps = [step(str(i), f"r{i}", tool, "text", task=f"t{i}") for i, tool in enumerate(tools)]
    mixed = describe_clusters(steps, np.zeros(len(steps), dtype=int), np.ones(len(steps)))[0]
    assert mixed.pattern == "calls book_reservation"  # the most common, 3 of 7
    assert mixed.shared_pattern() == ""
    most = describe_clusters(steps[:5], np.zeros(5, dtype=int), np.ones(5))[0]
    assert most.shared_pattern() == "calls book_reservation"  # 3 of 5


PLANNER_MEMBERS = [step(str(i), f"f{i}", "", "the plan leaves out a check") for i in range(4)]
# Eight failed and eight successful rollouts of one length and environment (the
# length-stratified lift then equals the crude one).
PLANNER_ROLLOUTS = {f"f{i}": True for i in range(8)} | {f"s{i}": False for i in range(8)}


def _planner_lifts(**options):
    """(crude lift, unadjusted stratified lift) of one cluster whose members are the
    planner turns of four failed rollouts, with ``options`` saying which rollouts
    contain it by assignment."""
    profile = describe_clusters(
        PLANNER_MEMBERS,
        np.zeros(4, dtype=int),
        np.ones(4),
        rollout_failed=PLANNER_ROLLOUTS,
        rollout_length={key: 10 for key in PLANNER_ROLLOUTS},
        rollout_group={key: "research" for key in PLANNER_ROLLOUTS},
        sampled_success={key for key, failed in PLANNER_ROLLOUTS.items() if not failed},
        **options,
    )[0]
    return profile.lift, profile.lift_unadjusted


def test_the_lift_counts_a_behaviour_by_assignment_on_both_sides():
    # Six of eight failed and six of eight successful rollouts have a planner turn that
    # lands in the cluster: it says nothing about failing. Failed rollouts counted by their
    # wrong steps (4) against successes counted by every action (6) made it look
    # protective.
    successes_with = [(f"s{i}", 0) for i in range(6)]
    assert _planner_lifts(assigned_success=successes_with)[0] == 0.8
    fair = _planner_lifts(
        assigned_success=successes_with,
        assigned_failure=[(f"f{i}", 0) for i in range(6)],
        sampled_failure={f"f{i}" for i in range(8)},
    )
    assert fair == (1.0, 1.0)


def test_a_behaviour_only_failed_rollouts_show_gets_a_lift_above_one():
    lifts = _planner_lifts(
        assigned_failure=[(f"f{i}", 0) for i in range(4)],
        sampled_failure={f"f{i}" for i in range(8)},
    )
    # All 4 rollouts showing it failed, half of all rollouts failed: 2x; against the
    # rollouts not showing it (4 of 12 failed), 3x.
    assert lifts == (2.0, 3.0)


def test_a_sample_of_the_failures_stands_for_all_of_them():
    # Only f0-f3 were assigned (the sample), each standing for two failed rollouts: f0
    # and f1 show it (four failures), as do s0-s3 (four successes).
    lifts = _planner_lifts(
        assigned_success=[(f"s{i}", 0) for i in range(4)],
        assigned_failure=[("f0", 0), ("f1", 0)],
        sampled_failure={f"f{i}" for i in range(4)},
        failure_scale=2.0,
    )
    assert lifts == (1.0, 1.0)
