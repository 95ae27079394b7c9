"""Coverage of sets shown before a later label, tested against the promise per agent system.

A set shown on a rollout page promises 1 - alpha for *its* agent system's rollouts (tau is
calibrated per system). So later human labels are counted per system: a system whose
rollouts drifted away from its calibration is named, and one system's good coverage
cannot hide another's shortfall, as a count over the whole project would.

The test is one-sided binomial: with ``checked`` labels and a mean promise p, the chance
of ``covered`` or fewer hits. Below ``p_threshold`` the system gets a warning. It runs once
per system, so with many systems a false warning somewhere is more likely than
``p_threshold``; the page shows each system's p-value so the reader can judge.

Example:
    >>> rows = monitor_by_system([("a", True, 0.1)] * 6 + [("a", False, 0.1)] * 4
    ...                          + [("b", True, 0.1)] * 10)
    >>> [(r.system, r.checked, r.covered, r.warns) for r in rows]
    [('a', 10, 6, True), ('b', 10, 10, False)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scipy.stats import binom

WARNING_P_VALUE = 0.05


@dataclass(frozen=True)
class CoverageMonitor:
    """Later labels checked against the sets shown before them, for one agent system."""

    system: str
    checked: int
    covered: int
    measured: float | None
    promised: float | None
    p_value: float | None
    warns: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def monitor(
    system: str, checks: Sequence[tuple[bool, float]], *, p_threshold: float = WARNING_P_VALUE
) -> CoverageMonitor:
    """The monitor of ``checks`` (covered, alpha) made on one system's rollouts.

    Example:
        >>> m = monitor("a", [(True, 0.1)] * 17 + [(False, 0.1)] * 3)
        >>> m.measured, m.warns
        (0.85, False)
    """
    checked = len(checks)
    if not checked:
        return CoverageMonitor(system, 0, 0, None, None, None, False)
    covered = sum(1 for hit, _ in checks if hit)
    promised = sum(1 - alpha for _, alpha in checks) / checked
    p_value = float(binom.cdf(covered, checked, promised))
    return CoverageMonitor(
        system=system,
        checked=checked,
        covered=covered,
        measured=covered / checked,
        promised=promised,
        p_value=p_value,
        warns=p_value < p_threshold,
    )


def monitor_by_system(
    checks: Iterable[tuple[str, bool, float]], *, p_threshold: float = WARNING_P_VALUE
) -> list[CoverageMonitor]:
    """One monitor per agent system of ``checks`` (system, covered, alpha), by name."""
    grouped: dict[str, list[tuple[bool, float]]] = {}
    for system, covered, alpha in checks:
        grouped.setdefault(system, []).append((covered, alpha))
    return [monitor(system, grouped[system], p_threshold=p_threshold) for system in sorted(grouped)]
