from __future__ import annotations

from attribution.core.attribute import attribute, point_estimate, responsible_agent
from attribution.core.conformal import Calibration
from tests.attribution.core.conftest import make_trajectory


def _calibration(tau: float, grouping: str = "none", **extra) -> Calibration:
    return Calibration(
        alpha=0.1, variant="two_sided", grouping=grouping, pooled_tau=tau, m=50, **extra
    )


def test_it_reports_set_point_agent_and_rollback():
    trajectory = make_trajectory(
        ["a", "b", "c", "d"],
        agents=["Orchestrator (thought)", "WebSurfer", "WebSurfer", "Orchestrator (-> WebSurfer)"],
    )
    result = attribute(trajectory, [0.1, 0.5, 0.3, 0.1], _calibration(0.6))
    assert (result.lo, result.hi) == (1, 2)
    assert result.point_step == 1
    assert result.rollback_step == 1
    assert result.agent == "WebSurfer"
    assert result.alpha == 0.1 and result.tau == 0.6


def test_it_reports_an_empty_set_honestly():
    result = attribute(make_trajectory(["a", "b"]), [0.5, 0.5], _calibration(0.2))
    assert result.is_empty and result.rollback_step is None
    assert result.point_step == 0


def test_it_uses_the_group_tau_when_the_group_was_calibrated():
    cal = _calibration(0.0, grouping="length", tau_by_group={"1-8": 1.0}, m_by_group={"1-8": 40})
    result = attribute(make_trajectory(["a", "b", "c"]), [0.2, 0.5, 0.3], cal)
    assert (result.lo, result.hi, result.group, result.calibration_group) == (0, 2, "1-8", "1-8")


def test_it_breaks_ties_towards_the_earliest_step_and_first_agent():
    assert point_estimate([0.2, 0.4, 0.4]) == 1
    assert responsible_agent(["A", "B"], [0.5, 0.5]) == "A"
