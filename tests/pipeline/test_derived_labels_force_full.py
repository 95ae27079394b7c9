"""When derived labels made by an incremental refresh call for a full one: a system that
reaches MIN_TRAINING_LABELS labels of its own gets its own scorer at a full refresh."""

from __future__ import annotations

from attribution.refresh_basis import AttributionBasis
from attribution.services import MIN_TRAINING_LABELS
from pipeline.incremental import derived_labels_force_full


def _basis(labelled_by_system):
    basis = AttributionBasis(
        scorer_version="v",
        calibration_id=None,
        per_system={},
        alpha=0.1,
        gold_actions_calibrate=False,
        calibration_borrow={},
        failed=500,
        labelled=sum(labelled_by_system.values()),
        calibrating=0,
        labelled_by_system=labelled_by_system,
    )
    return {"attribution": basis.to_dict()}


def test_a_system_reaching_enough_labels_of_its_own_forces_a_full_refresh():
    # The project has far more than MIN_TRAINING_LABELS labels, one system has 38.
    basis = _basis({"big": 300, "small": MIN_TRAINING_LABELS - 2})
    assert derived_labels_force_full(basis, {}, 1, {"small": 1}) == ""
    why = derived_labels_force_full(basis, {}, 2, {"small": 2})
    assert "small's own scorer" in why


def test_labels_of_a_system_that_already_had_its_own_scorer_do_not():
    basis = _basis({"big": 300, "small": 10})
    assert derived_labels_force_full(basis, {}, 5, {"big": 5}) == ""


def test_a_basis_stored_before_per_system_counts_keeps_the_project_rule():
    basis = _basis({})
    basis["attribution"]["labelled"] = MIN_TRAINING_LABELS - 1
    assert "train the learned scorer" in derived_labels_force_full(basis, {}, 1, {"x": 1})
