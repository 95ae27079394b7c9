"""Plotly figures of the analysis pages, as JSON-ready dicts built from plain rows.

Example:
    >>> figure = spread_bar({"airline": 12, "retail": 3}, title="Environments")
    >>> figure["data"][0]["type"], figure["data"][0]["x"]
    ('bar', ['airline', 'retail'])
    >>> fig = misbehaviour_map([{"x": 0.1, "y": 0.2, "group": "calls book", "url": "/s#1"},
    ...                         {"x": 0.3, "y": 0.1, "group": None, "url": "/s#2"}])
    >>> [trace["name"] for trace in fig["data"]]
    ['calls book', 'unclustered']
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

PALETTE = [
    "#c2410c", "#2563eb", "#059669", "#7c3aed", "#db2777", "#0891b2",
    "#65a30d", "#d97706", "#dc2626", "#4f46e5", "#0d9488", "#9333ea",
]  # fmt: skip
NOISE_COLOUR = "#cbd5e1"
UNCLUSTERED = "unclustered"
MAP_GROUPS = len(PALETTE)


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#ffffff",
        "margin": {"t": 48, "r": 16, "b": 48, "l": 56},
    }
    layout.update(extra)
    return layout


def spread_bar(
    counts: Mapping[str, int], *, title: str, colour: str = PALETTE[0]
) -> dict[str, Any]:
    """Wrong steps of one misbehaviour per environment (or policy model), largest first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "data": [
            {
                "type": "bar",
                "x": [name or "(none)" for name, _ in ordered],
                "y": [count for _, count in ordered],
                "marker": {"color": colour},
                "hovertemplate": "%{x}: %{y} wrong steps<extra></extra>",
            }
        ],
        "layout": _layout(
            title,
            xaxis={"automargin": True},
            yaxis={"title": {"text": "wrong steps"}, "rangemode": "tozero"},
        ),
    }


def misbehaviour_map(points: Sequence[Mapping[str, Any]], *, title: str = "") -> dict[str, Any]:
    """A WebGL scatter of wrong steps, one trace per misbehaviour; unclustered in grey.

    Each point carries its step's URL as ``customdata`` so a click opens the step. Beyond
    the twelve largest misbehaviours, the rest share one "other" trace.
    """
    sizes: dict[str, int] = {}
    for point in points:
        if point.get("group"):
            sizes[point["group"]] = sizes.get(point["group"], 0) + 1
    shown = [label for label, _ in sorted(sizes.items(), key=lambda i: (-i[1], i[0]))[:MAP_GROUPS]]
    traces: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for index, shown_name in enumerate(shown):
        traces[shown_name] = _trace(shown_name, PALETTE[index % len(PALETTE)], 7)
    for point in points:
        group: str | None = point.get("group")
        name = group if group and group in traces else ("other" if group else UNCLUSTERED)
        if name not in traces:
            traces[name] = _trace(name, "#94a3b8" if name == "other" else NOISE_COLOUR, 5)
        trace = traces[name]
        trace["x"].append(round(float(point["x"]), 5))
        trace["y"].append(round(float(point["y"]), 5))
        trace["customdata"].append(point.get("url", ""))
        trace["text"].append(point.get("label", "") or name)
    ordered = [trace for name, trace in traces.items() if name not in ("other", UNCLUSTERED)]
    ordered += [traces[name] for name in ("other", UNCLUSTERED) if name in traces]
    return {
        "data": ordered,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "component 1"}, "zeroline": False},
            yaxis={"title": {"text": "component 2"}, "zeroline": False},
            legend={"itemsizing": "constant"},
            hovermode="closest",
        ),
    }


def _trace(name: str, colour: str, size: int) -> dict[str, Any]:
    return {
        "type": "scattergl",
        "mode": "markers",
        "name": name,
        "x": [],
        "y": [],
        "customdata": [],
        "text": [],
        "marker": {"color": colour, "size": size, "opacity": 0.75},
        "hovertemplate": "%{text}<extra></extra>",
    }
