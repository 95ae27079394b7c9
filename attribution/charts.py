"""Plotly figures of the attribution pages as plain JSON-ready dicts.

Rendered by ``static/js/charts.js`` from ``<script type="application/json">`` blocks made
with Django's ``json_script``; tests call these functions without a request.

Example:
    >>> figure = probability_strip([0.1, 0.6, 0.3], lo=1, hi=2, point_step=1)
    >>> figure["data"][0]["type"], figure["data"][0]["marker"]["color"]
    ('bar', ['#9ca3af', '#c2410c', '#fb923c'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

IN_SET = "#fb923c"
POINT = "#c2410c"
OUTSIDE = "#9ca3af"
PROMISED = "#6b7280"
MEASURED = "#2563eb"
# One colour per agent system in the calibration charts.
CALIBRATION_CHART_HEIGHT = 340
# Below the plot, so several systems' names never squeeze it or scroll.
LEGEND_BELOW = {"orientation": "h", "x": 0, "y": -0.25}
SERIES = ("#2563eb", "#ea580c", "#059669", "#7c3aed", "#db2777", "#0891b2")


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}},
        "margin": {"l": 50, "r": 20, "t": 40, "b": 45},
        "showlegend": False,
    }
    layout.update(extra)
    return layout


def probability_strip(
    probabilities: Sequence[float],
    *,
    lo: int | None,
    hi: int | None,
    point_step: int,
    rollback_step: int | None = None,
) -> dict[str, Any]:
    """One bar per step; the prediction set highlighted as a band, the point estimate darker."""
    steps = list(range(len(probabilities)))
    colours = []
    for i in steps:
        if i == point_step:
            colours.append(POINT)
        elif lo is not None and hi is not None and lo <= i <= hi:
            colours.append(IN_SET)
        else:
            colours.append(OUTSIDE)
    shapes = []
    if lo is not None and hi is not None:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": lo - 0.5,
                "x1": hi + 0.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": IN_SET,
                "opacity": 0.15,
                "line": {"width": 0},
            }
        )
    if rollback_step is not None:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": rollback_step - 0.5,
                "x1": rollback_step - 0.5,
                "y0": 0,
                "y1": 1,
                "line": {"color": POINT, "dash": "dot", "width": 2},
            }
        )
    return {
        "data": [
            {
                "type": "bar",
                "x": steps,
                "y": [round(float(p), 6) for p in probabilities],
                "marker": {"color": colours},
                "hovertemplate": "step %{x}: %{y:.1%}<extra></extra>",
                "customdata": [f"#step-{i}" for i in steps],
            }
        ],
        "layout": _layout(
            "",
            "step",
            "probability decisive",
            shapes=shapes,
            bargap=0.1,
            height=180,
            margin={"l": 50, "r": 10, "t": 10, "b": 40},
        ),
    }


def coverage_against_alpha(
    curves: Mapping[str, Sequence[Mapping[str, Any]]], *, alpha: float | None = None
) -> dict[str, Any]:
    """Measured held-out coverage against the promised 1 - alpha, one line per curve (per
    agent system: each is calibrated on its own labels)."""
    alphas = sorted({row["alpha"] for curve in curves.values() for row in curve})
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "promised 1 - alpha",
            "x": alphas,
            "y": [round(1 - a, 6) for a in alphas],
            "line": {"color": PROMISED, "dash": "dash"},
        }
    ]
    for k, (name, curve) in enumerate(curves.items()):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{name} (held out)",
                "x": [row["alpha"] for row in curve],
                "y": [row["coverage"] for row in curve],
                "line": {"color": SERIES[k % len(SERIES)]},
            }
        )
    shapes = []
    if alpha is not None:
        shapes.append(
            {
                "type": "line", "xref": "x", "yref": "paper", "x0": alpha, "x1": alpha,
                "y0": 0, "y1": 1, "line": {"color": POINT, "dash": "dot"},
            }
        )  # fmt: skip
    return {
        "data": data,
        "layout": _layout(
            "Coverage against alpha",
            "alpha",
            "coverage",
            shapes=shapes,
            showlegend=True,
            height=CALIBRATION_CHART_HEIGHT,
            legend=LEGEND_BELOW,
            yaxis={"title": {"text": "coverage"}, "range": [0, 1.02]},
        ),
    }


def set_size_distribution(sizes: Mapping[int, int]) -> dict[str, Any]:
    """How many rollouts have a set of each size (0 = an empty set)."""
    keys = sorted(sizes)
    return {
        "data": [
            {
                "type": "bar",
                "x": keys,
                "y": [sizes[k] for k in keys],
                "marker": {"color": MEASURED},
                "hovertemplate": "%{y} rollouts with %{x} steps in the set<extra></extra>",
            }
        ],
        "layout": _layout(
            "Set sizes", "steps in the set", "rollouts", height=CALIBRATION_CHART_HEIGHT
        ),
    }


def coverage_by_group(
    series: Mapping[str, Sequence[Mapping[str, Any]]], *, promised: float
) -> dict[str, Any]:
    """Measured coverage per calibration group (length bucket), one bar series per agent
    system, with the promise as a line."""
    data = [
        {
            "type": "bar",
            "name": name,
            "x": [str(row["group"]) for row in rows],
            "y": [row["coverage"] for row in rows],
            # The bucket's labels, not the test count summed over the random halves.
            "text": [f"{row['m']} labels" for row in rows],
            "customdata": [row["tested"] for row in rows],
            "hovertemplate": "%{y:.3f} held out, %{customdata} tests over the random halves"
            "<extra>%{fullData.name}</extra>",
            "marker": {"color": SERIES[k % len(SERIES)]},
        }
        for k, (name, rows) in enumerate(series.items())
    ]
    return {
        "data": data,
        "layout": _layout(
            "Coverage per group", "length bucket (steps)", "coverage",
            barmode="group", showlegend=len(data) > 1, height=CALIBRATION_CHART_HEIGHT,
            legend=LEGEND_BELOW,
            yaxis={"title": {"text": "coverage"}, "range": [0, 1.02]},
            shapes=[
                {
                    "type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                    "y0": promised, "y1": promised, "line": {"color": PROMISED, "dash": "dash"},
                }
            ],
        ),
    }  # fmt: skip
