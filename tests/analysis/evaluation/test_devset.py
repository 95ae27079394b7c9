"""The committed development set: complete, labelled with known categories, reproducible."""

from __future__ import annotations

import json

from analysis.evaluation.build_devset import rebuild
from analysis.evaluation.devset import (
    AMBIGUOUS,
    CLEAR,
    DEVSET_PATH,
    TAU_BENCH,
    WHO_AND_WHEN,
    labelled_steps,
    load_devset,
)
from analysis.evaluation.tau_deviations import KINDS
from tests.conftest import REPO_ROOT, SHARED_DATA, shared_file

MAST_FILE = REPO_ROOT / "analysis" / "data" / "mast.json"
MAST_CODES = {mode["code"] for mode in json.loads(MAST_FILE.read_text())["modes"]}


def test_it_holds_every_who_and_when_step_and_every_failed_tau_rollout():
    devset = load_devset()
    assert (len(devset.part(WHO_AND_WHEN)), len(devset.part(TAU_BENCH))) == (184, 116)
    assert len({item.item_id for item in devset.items}) == 300


def test_it_labels_who_and_when_steps_with_mast_modes_only():
    assert {item.category for item in load_devset().part(WHO_AND_WHEN)} <= MAST_CODES


def test_it_gives_every_ambiguous_annotation_a_reason_and_no_clear_one():
    for item in load_devset().part(WHO_AND_WHEN):
        assert item.confidence in (CLEAR, AMBIGUOUS)
        assert bool(item.note) == (item.confidence == AMBIGUOUS), item.item_id


def test_it_labels_tau_rollouts_with_the_defined_kinds_only():
    assert {item.category for item in load_devset().part(TAU_BENCH)} <= set(KINDS)


def test_it_regenerates_the_committed_tau_part_from_the_data():
    shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json")
    shared_file("who_and_when/Who&When")
    committed = json.loads(DEVSET_PATH.read_text(encoding="utf-8"))
    rebuilt = rebuild(json.loads(DEVSET_PATH.read_text(encoding="utf-8")), SHARED_DATA)
    assert rebuilt[TAU_BENCH] == committed[TAU_BENCH]


def test_it_makes_each_item_the_step_it_names():
    shared_file("who_and_when/Who&When")
    devset = load_devset()
    items = devset.part(WHO_AND_WHEN)[:5] + devset.part(TAU_BENCH)[:5]
    for item, step in labelled_steps(items, SHARED_DATA):
        assert step.index == item.step
        assert step.key == f"{item.item_id}#{item.step}"
