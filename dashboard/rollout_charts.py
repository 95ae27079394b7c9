"""The rollout page's step timeline: one lane per agent, the prediction set and the
rollback point marked, as a plotly figure built from plain rows (tests call it directly)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dashboard.charts import AGENT_COLOURS, Chart, figure_layout

#: Below this many steps the axis ticks every step.
SHORT_ROLLOUT = 25
#: Steps of room either side of the first and last step on the x axis.
EDGE_PAD_STEPS = 0.6
KIND_SYMBOLS = {"tool_call": "diamond", "tool_result": "square", "message": "circle"}


def agent_lanes(
    steps: Sequence[tuple[int, str, str, bool]],
    *,
    prediction_set: tuple[int, int] | None = None,
    rollback_step: int | None = None,
    decisive_step: int | None = None,
    colours: Mapping[str, str] | None = None,
    shown: tuple[int, int] | None = None,
) -> Chart:
    """Every step of a rollout as a mark in its agent's lane (the role's, for one agent).

    ``steps`` holds (index, lane, kind, is_error). Lanes are numbered rows (their names on
    the axis) and a trace holds one lane's steps of one kind, so a 5,000-step rollout
    costs a few numbers per step in the page. A click on a mark opens that step
    (``data-click="step"``: the page's script turns the point's x into the step).
    """
    lanes: list[str] = []
    for _, lane, _, _ in steps:
        if lane not in lanes:
            lanes.append(lane)
    position = {lane: number for number, lane in enumerate(lanes)}
    groups: dict[tuple[str, str], list[int]] = {}
    for index, lane, kind, _ in steps:
        groups.setdefault((lane, kind), []).append(index)
    small = len(steps) < 300
    data: list[dict[str, Any]] = []
    for (lane, kind), indices in groups.items():
        number = position[lane]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": lane,
                "x": indices,
                "y": [number] * len(indices),
                "hovertemplate": f"step %{{x}}: {kind.replace('_', ' ')}<extra>{lane}</extra>",
                "marker": {
                    "size": 10 if small else 6,
                    "color": (colours or {}).get(lane, AGENT_COLOURS[number % len(AGENT_COLOURS)]),
                    "symbol": KIND_SYMBOLS.get(kind, "circle"),
                },
                "showlegend": False,
                "cliponaxis": False,
            }
        )
    errors = [(index, lane) for index, lane, _, is_error in steps if is_error]
    if errors:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "error",
                "x": [index for index, _ in errors],
                "y": [position[lane] for _, lane in errors],
                "hovertemplate": "step %{x}: error<extra></extra>",
                "marker": {
                    "size": 16 if small else 10,
                    "color": "rgba(0,0,0,0)",
                    "line": {"width": 2, "color": "#b91c1c"},
                },
                "showlegend": False,
                "cliponaxis": False,
            }
        )
    shapes: list[dict[str, Any]] = []
    if shown is not None:
        # The window of steps listed below the chart, on a long rollout.
        shapes.append(
            {"type": "rect", "xref": "x", "yref": "paper", "x0": shown[0] - 0.5,
             "x1": shown[1] + 0.5, "y0": 0, "y1": 1, "fillcolor": "#dbeafe",
             "opacity": 0.5, "line": {"width": 0}, "layer": "below"}
        )  # fmt: skip
    if prediction_set is not None:
        shapes.append(
            {"type": "rect", "xref": "x", "yref": "paper", "x0": prediction_set[0] - 0.5,
             "x1": prediction_set[1] + 0.5, "y0": 0, "y1": 1, "fillcolor": "#fdba74",
             "opacity": 0.35, "line": {"width": 0}, "layer": "below"}
        )  # fmt: skip
    for step, colour in ((rollback_step, "#c2410c"), (decisive_step, "#7c3aed")):
        if step is not None:
            shapes.append(
                {"type": "line", "xref": "x", "yref": "paper", "x0": step - 0.5, "x1": step - 0.5,
                 "y0": 0, "y1": 1, "line": {"color": colour, "width": 2, "dash": "dot"}}
            )  # fmt: skip
    layout = figure_layout("Steps by agent", "step", "", shapes=shapes, hovermode="closest")
    layout["margin"] = {"t": 40, "r": 16, "b": 44, "l": 16}
    if steps:
        first = min(index for index, _, _, _ in steps)
        last = max(index for index, _, _, _ in steps)
        # Plotly's own range pads the marks and the shapes and starts the axis at step -1.
        # A little over half a step either side holds the set's and the rollback point's
        # edges (drawn half a step before a step); the marks of the first and last step
        # are drawn whole over the edge (``cliponaxis``) where half a step is a pixel.
        layout["xaxis"]["range"] = [first - EDGE_PAD_STEPS, last + EDGE_PAD_STEPS]
        if last < SHORT_ROLLOUT:
            # Steps are whole: plotly's own ticks on a five-step rollout read 0, 0.5, 1, ...
            layout["xaxis"].update({"tickmode": "linear", "tick0": 0, "dtick": 1})
    layout["yaxis"].update(
        {
            "tickmode": "array",
            "tickvals": list(range(len(lanes))),
            "ticktext": lanes,
            "range": [len(lanes) - 0.5, -0.5],
            "zeroline": False,
        }
    )
    rows = []
    for lane in lanes:
        indices = [s[0] for s in steps if s[1] == lane]
        rows.append([lane, len(indices), min(indices), max(indices)])
    return Chart(
        id="chart-lanes",
        title="Steps by agent",
        figure={"data": data, "layout": layout},
        columns=["lane", "steps", "first step", "last step"],
        rows=rows,
        height=110 + 34 * len(lanes),
        clickable=True,
        click_kind="step",
    )
