"""The labelling queue: systems short of labels first, in a representative order."""

from __future__ import annotations

import random

import pytest

from attribution.core.labelling_queue import (
    REASON_CALIBRATION,
    REASON_DEFICIT,
    REASON_UNCERTAIN,
    QueueItem,
    calibration_progress,
    labelling_queue,
    normalised_entropy,
)

SURE = [0.97, 0.01, 0.01, 0.01]
UNSURE = [0.25, 0.25, 0.25, 0.25]


def _items(system, count, probabilities=SURE, trains=False, prefix=None):
    return [
        QueueItem(f"{prefix or system}-{i}", system, probabilities, trains) for i in range(count)
    ]


def test_it_puts_every_rollout_in_the_queue_once():
    items = _items("A", 5) + _items("B", 7, trains=True) + _items("C", 3)
    queue = labelling_queue(items, {"A": 1, "B": 20}, alpha=0.1)
    assert sorted(e.rollout_id for e in queue) == sorted(i.rollout_id for i in items)


def test_it_asks_for_a_systems_deficit_before_anything_else():
    items = _items("calibrated", 10, UNSURE, trains=True) + _items("short", 10)
    queue = labelling_queue(items, {"calibrated": 50, "short": 6}, alpha=0.1)
    assert [e.agent_system for e in queue[:3]] == ["short"] * 3
    assert [e.reason for e in queue[:3]] == [REASON_DEFICIT] * 3
    assert all(e.reason != REASON_DEFICIT for e in queue[3:])


def test_it_starts_with_the_system_that_unlocks_most_rollouts_per_label():
    # "big" needs 9 labels for 90 rollouts (10 per label); "small" 3 for 12 (4 per label).
    items = _items("small", 12) + _items("big", 90)
    queue = labelling_queue(items, {"small": 6, "big": 0}, alpha=0.1)
    assert {e.agent_system for e in queue[:9]} == {"big"}
    assert {e.agent_system for e in queue[9:12]} == {"small"}


def test_it_leaves_a_system_that_cannot_reach_its_deficit_for_last():
    items = _items("hopeless", 2) + _items("reachable", 20)
    queue = labelling_queue(items, {}, alpha=0.1)
    assert [e.agent_system for e in queue[:9]] == ["reachable"] * 9
    # Labelling both of its rollouts still brings no claim: after everything that does,
    # the rest of the reachable system's rollouts included (a trial found such systems
    # filling the first places, ahead of a calibrated system's rollouts).
    assert [e.agent_system for e in queue[:20]] == ["reachable"] * 20
    assert [(e.agent_system, e.reason) for e in queue[20:]] == [("hopeless", "short")] * 2


def test_it_puts_a_short_system_after_a_calibrated_ones_rollouts():
    items = _items("two-rollouts", 2) + _items("calibrated", 5)
    queue = labelling_queue(items, {"calibrated": 40}, alpha=0.1)
    assert [e.reason for e in queue[-2:]] == ["short", "short"]
    assert {e.agent_system for e in queue[:5]} == {"calibrated"}


def test_it_orders_the_deficit_at_random_not_by_the_scorers_doubt():
    # Half of the rollouts are ones the scorer is unsure of; the deficit picks must not be
    # all of those (that would calibrate tau on the hardest rollouts only).
    items = _items("A", 50, UNSURE, prefix="unsure") + _items("A", 50, SURE, prefix="sure")
    queue = labelling_queue(items, {"A": 0}, alpha=0.05)  # a deficit of 19
    picked = [e for e in queue if e.reason == REASON_DEFICIT]
    assert len(picked) == 19
    unsure = sum(e.rollout_id.startswith("unsure") for e in picked)
    assert 3 <= unsure <= 16


def test_it_fills_a_deficit_with_rollouts_whose_label_calibrates():
    items = _items("A", 9, trains=True, prefix="train") + _items("A", 9, prefix="calib")
    queue = labelling_queue(items, {"A": 3}, alpha=0.1)  # a deficit of 6
    picked = [e.rollout_id for e in queue if e.reason == REASON_DEFICIT]
    assert len(picked) == 6 and all(rollout.startswith("calib") for rollout in picked)


def test_it_gives_the_same_order_whatever_the_input_order():
    items = _items("A", 8) + _items("B", 8, UNSURE, trains=True)
    shuffled = list(items)
    random.Random(1).shuffle(shuffled)
    assert labelling_queue(items, {"A": 2}, alpha=0.1) == labelling_queue(
        shuffled, {"A": 2}, alpha=0.1
    )


def test_it_asks_for_training_labels_where_the_scorer_is_least_sure():
    items = [
        QueueItem("sure", "A", SURE, trains=True),
        QueueItem("unsure", "A", UNSURE, trains=True),
        QueueItem("middle", "A", [0.6, 0.2, 0.1, 0.1], trains=True),
    ]
    queue = labelling_queue(items, {"A": 100}, alpha=0.1)
    assert [e.rollout_id for e in queue] == ["unsure", "middle", "sure"]
    assert {e.reason for e in queue} == {REASON_UNCERTAIN}


def test_it_alternates_training_and_calibration_labels_once_calibrated():
    items = _items("A", 3, trains=True, prefix="train") + _items("A", 3, prefix="calib")
    queue = labelling_queue(items, {"A": 100}, alpha=0.1)
    assert [e.reason for e in queue] == [REASON_UNCERTAIN, REASON_CALIBRATION] * 3


def test_it_measures_uncertainty_independently_of_the_length():
    assert normalised_entropy([0.5, 0.5]) == pytest.approx(normalised_entropy([0.1] * 10))
    assert normalised_entropy([1.0, 0.0, 0.0]) == 0.0


def test_it_reports_progress_toward_calibration_per_system():
    progress = calibration_progress({"A": 3, "B": 40, "": 0}, alpha=0.1, min_labels=20)
    assert [(p.agent_system, p.labels, p.needed, p.calibrated) for p in progress] == [
        ("(unknown system)", 0, 20, False),
        ("A", 3, 17, False),
        ("B", 40, 0, True),
    ]
    assert progress[0].target == 20


def test_it_reads_a_blank_system_as_the_unknown_one():
    items = _items("", 12)
    queue = labelling_queue(items, {"": 9}, alpha=0.1)
    assert {e.reason for e in queue} == {REASON_CALIBRATION}
    assert {e.agent_system for e in queue} == {"(unknown system)"}
