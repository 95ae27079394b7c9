"""Reading the evaluation's JSON: scorer titles, "mean ± sd", one conformal row.

Example:
    >>> fmt_pm({"mean": 0.9, "std": 0.05})
    '0.900 ± 0.050'
"""

from __future__ import annotations

from typing import Any

SCORER_TITLES = {
    "learned": "learned (ours)",
    "heuristic": "heuristic signals",
    "position_prior": "position prior",
    "constant_position": "constant position",
    "uniform": "uniform",
}
COVERAGE_SLACK = 0.02
MIN_BUCKET_TEST = 20


def fmt_pm(summary: dict[str, Any], digits: int = 3) -> str:
    return f"{summary['mean']:.{digits}f} ± {summary['std']:.{digits}f}"


def conformal_row(
    conformal: dict[str, Any], scorer: str, variant: str, grouping: str, alpha: float
) -> dict[str, Any] | None:
    for row in conformal["rows"]:
        if (row["scorer"], row["variant"], row["grouping"], row["alpha"]) == (
            scorer,
            variant,
            grouping,
            alpha,
        ):
            return row
    return None
