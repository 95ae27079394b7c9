from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from analysis.core.error_templates import ErrorTemplates, error_key, telling_line

TAU = Path(__file__).resolve().parents[3] / "../shared/data/tau_bench/historical_trajectories"

VARIANTS = [
    "Error: payment amount does not add up, total price is 375, but paid 299",
    "Error: payment amount does not add up, total price is 1203, but paid 833",
    "Error: user alice_9 does not exist",
    "Error: user bob does not exist",
    "Error: user carol does not exist",
    "Error: gift card balance is not enough",
]


def test_it_groups_variants_that_differ_by_numbers_and_ids():
    templates = ErrorTemplates().fit(VARIANTS)
    assert templates.template(VARIANTS[0]) == templates.template(VARIANTS[1])
    assert templates.template("Error: user dave does not exist") == (
        "Error: user <*> does not exist"
    )


def test_it_keeps_different_errors_apart():
    templates = ErrorTemplates().fit(VARIANTS)
    assert templates.template(VARIANTS[0]) != templates.template(VARIANTS[5])


def test_it_gives_the_same_templates_whatever_the_input_order():
    forward = ErrorTemplates().fit(VARIANTS)
    backward = ErrorTemplates().fit(list(reversed(VARIANTS)))
    assert [forward.template(v) for v in VARIANTS] == [backward.template(v) for v in VARIANTS]


def test_it_survives_pickling():
    templates = pickle.loads(pickle.dumps(ErrorTemplates().fit(VARIANTS)))
    assert templates.template("Error: user erin does not exist") == (
        "Error: user <*> does not exist"
    )


def test_it_gives_no_template_to_no_error():
    assert ErrorTemplates().fit([]).template("") == ""


def test_it_reads_the_exception_line_of_a_traceback():
    text = 'exitcode: 1 (execution failed)\nTraceback:\n  File "x"\nKeyError: "Street"'
    assert telling_line(text) == 'KeyError: "Street"'
    assert error_key(text) == "KeyError: <quoted>"


def test_it_reduces_the_tau_bench_airline_errors_to_a_few_templates():
    path = TAU / "gpt-4o-airline.json"
    if not path.exists():
        pytest.skip("shared data not present")
    rollouts = json.loads(path.read_text())
    errors = [
        m["content"]
        for r in rollouts
        for m in r["traj"]
        if m.get("role") == "tool" and str(m.get("content")).startswith("Error")
    ]
    templates = ErrorTemplates().fit(errors)
    mined = {templates.template(error) for error in errors}
    assert len(set(errors)) > 2 * len(mined)
    assert "Error: gift card balance is not enough" in mined
