"""Plotly figures of the dashboard as plain JSON-ready dicts, with a table fallback each.

Each builder takes plain rows (from ``dashboard.selectors``) and returns a :class:`Chart`:
the figure for ``static/js/charts.js`` and the same numbers as a table for readers without
JavaScript or who want the exact values. Tests call these without a request.

Example:
    >>> chart = failure_heatmap([{"environment": "airline", "policy_model": "gpt-4o",
    ...                           "total": 4, "failed": 3}])
    >>> chart.figure["data"][0]["type"], chart.figure["data"][0]["z"]
    ('heatmap', [[75.0]])
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.overview import POSITION_BUCKETS, UPLOADS_SHOWN

FAILURE_SCALE = [[0.0, "#f0fdf4"], [0.5, "#fdba74"], [1.0, "#b91c1c"]]
SERIES_COLOURS = ["#c2410c", "#2563eb", "#059669", "#7c3aed", "#db2777"]
AGENT_COLOURS = [
    "#2563eb", "#059669", "#d97706", "#7c3aed", "#db2777",
    "#0891b2", "#65a30d", "#dc2626", "#4b5563", "#9333ea",
]  # fmt: skip


@dataclass
class Chart:
    id: str
    title: str
    figure: dict[str, Any]
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    height: int = 340
    clickable: bool = False
    note: str = ""
    wide: bool = False
    # What a click on a point opens: its customdata URL ("url") or its step ("step").
    click_kind: str = "url"


def figure_layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#ffffff",
        "margin": {"t": 48, "r": 16, "b": 56, "l": 64},
    }
    layout.update(extra)
    return layout


def _get(item: Any, name: str, default: Any = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "—"


def _judged(row: Mapping[str, Any]) -> int:
    """Rollouts of a row whose outcome is known: a failure rate counts only those (a row
    stored before successes were counted treats every rollout as judged)."""
    succeeded = row.get("succeeded")
    return int(row["total"]) if succeeded is None else int(row["failed"]) + int(succeeded)


def _unknown_note(row: Mapping[str, Any]) -> str:
    unknown = int(row["total"]) - _judged(row)
    return f"{unknown} without an outcome" if unknown else ""


#: Characters of an axis label before it is cut with an ellipsis.
TICK_LABEL_MAX = 18


def _short(label: object, limit: int = TICK_LABEL_MAX) -> str:
    """A tick label cut to ``limit`` characters, the cut marked.

    >>> _short("mistral/mistral-small-latest")
    'mistral/mistral-s…'
    """
    text = str(label)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_heatmap(rows: Sequence[Mapping[str, Any]]) -> Chart:
    """Failure rate (%) for each environment (rows) and policy model (columns)."""
    environments = sorted({r["environment"] for r in rows})
    models = sorted({r["policy_model"] for r in rows})
    cells = {(r["environment"], r["policy_model"]): r for r in rows}
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for env in environments:
        z_row: list[float | None] = []
        text_row: list[str] = []
        for model_name in models:
            cell = cells.get((env, model_name))
            if cell is None or not cell["total"]:
                z_row.append(None)
                text_row.append("")
            elif not _judged(cell):
                z_row.append(None)
                text_row.append(f"{cell['total']}<br>no outcome")
            else:
                z_row.append(round(100.0 * cell["failed"] / _judged(cell), 1))
                text_row.append(f"{z_row[-1]:.0f}%<br>{cell['failed']}/{_judged(cell)}")
        z.append(z_row)
        text.append(text_row)
    figure: dict[str, Any] = {
        "data": [
            {
                "type": "heatmap",
                "x": models,
                "y": environments,
                "z": z,
                "text": text,
                "texttemplate": "%{text}",
                "hovertemplate": "%{y} × %{x}<br>failure rate %{z:.1f}%<extra></extra>",
                # An empty combination said "failure rate 0.0%" under the pointer.
                "hoverongaps": False,
                "colorscale": FAILURE_SCALE,
                "zmin": 0,
                "zmax": 100,
                "colorbar": {"title": {"text": "failed %"}, "thickness": 12},
            }
        ],
        "layout": figure_layout(
            "Failure rate by environment and policy model", "policy model", "environment"
        ),
    }
    # Long names squeezed the cells until their text was unreadable and cut off the
    # rotated axis title: ticks show a shortened name, the hover the full one (x and y
    # stay the full names, so two names with the same beginning stay two columns).
    figure["layout"]["xaxis"].update(
        {"tickmode": "array", "tickvals": models, "ticktext": [_short(m) for m in models]}
    )
    figure["layout"]["yaxis"].update(
        {
            "tickmode": "array",
            "tickvals": environments,
            "ticktext": [_short(e) for e in environments],
        }
    )
    table = [
        [
            r["environment"],
            r["policy_model"],
            r["total"],
            r["failed"],
            r["total"] - _judged(r),
            _percent(r["failed"], _judged(r)),
        ]
        for r in rows
    ]
    return Chart(
        id="chart-heatmap",
        title="Failures by environment and model",
        figure=figure,
        columns=[
            "environment",
            "policy model",
            "rollouts",
            "failed",
            "without an outcome",
            "failure rate (of those with one)",
        ],
        rows=table,
        height=max(320, 140 + 46 * len(environments)),
    )


def decisive_position_histogram(series: Mapping[str, Sequence[int]]) -> Chart:
    """How far into a rollout the decisive step sits: share of each series per tenth."""
    buckets = [f"{10 * i}–{10 * (i + 1)}%" for i in range(POSITION_BUCKETS)]
    data = []
    for number, (name, counts) in enumerate(series.items()):
        total = sum(counts) or 1
        data.append(
            {
                "type": "bar",
                "name": f"{name} (n={sum(counts)})",
                "x": buckets,
                "y": [round(100.0 * c / total, 1) for c in counts],
                "customdata": list(counts),
                "hovertemplate": "%{x}: %{y:.1f}% (%{customdata} rollouts)<extra></extra>",
                "marker": {"color": SERIES_COLOURS[number % len(SERIES_COLOURS)]},
            }
        )
    layout = figure_layout(
        "Where the decisive step sits in a rollout",
        "position of the decisive step (share of the rollout's steps)",
        "% of rollouts",
        barmode="group",
        legend={"orientation": "h", "y": -0.32},
    )
    layout["margin"]["b"] = 100
    return Chart(
        id="chart-positions",
        title="Decisive step position",
        figure={"data": data, "layout": layout},
        columns=["position", *series.keys()],
        rows=[
            [bucket, *(counts[i] for counts in series.values())] for i, bucket in enumerate(buckets)
        ],
        height=360,
    )


def failure_rate_over_uploads(rows: Sequence[Mapping[str, Any]], urls: Sequence[str] = ()) -> Chart:
    """Failure rate of each upload in the order they arrived; a click lists its rollouts.

    The axis names each upload by its id: the chart holds only the newest
    ``UPLOADS_SHOWN`` uploads, and counting them "1…60" read as if they were all. An
    upload with no outcome has no point and takes no place on the axis (it left an empty
    third of the chart); the title counts what is left out.
    """
    labels = [f"#{r['id']} {str(r['original_name'])[:40]}" for r in rows]
    links = list(urls) if urls else [""] * len(rows)
    plotted = [
        (label, url, r) for label, url, r in zip(labels, links, rows, strict=True) if _judged(r)
    ]
    left_out = len(rows) - len(plotted)
    title = (
        f"Failure rate over the newest {len(rows)} uploads"
        if len(rows) >= UPLOADS_SHOWN
        else "Failure rate over uploads"
    )
    if left_out:
        title += f" ({left_out} without an outcome left out)"
    figure: dict[str, Any] = {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [f"#{r['id']}" for _, _, r in plotted],
                "y": [round(100.0 * r["failed"] / _judged(r), 1) for _, _, r in plotted],
                "customdata": [
                    [url, label, r["failed"], _judged(r), _unknown_note(r)]
                    for label, url, r in plotted
                ],
                "hovertemplate": "upload %{customdata[1]}<br>failure rate %{y:.1f}%"
                " (%{customdata[2]}/%{customdata[3]}) %{customdata[4]}<extra></extra>",
                "line": {"color": "#c2410c", "shape": "hv" if len(plotted) > 30 else "linear"},
                "marker": {"size": 7 if len(plotted) <= 60 else 4},
            }
        ],
        "layout": figure_layout(title, "upload (its number), oldest first", "failure rate (%)"),
    }
    # Each upload is one category in arrival order; plotly thins the tick labels itself.
    figure["layout"]["xaxis"].update({"type": "category"})
    figure["layout"]["yaxis"]["range"] = [-3, 103]
    return Chart(
        id="chart-uploads",
        title="Failure rate over uploads",
        figure=figure,
        columns=[
            "upload",
            "rollouts",
            "failed",
            "without an outcome",
            "failure rate (of those with one)",
        ],
        rows=[
            [
                label,
                r["total"],
                r["failed"],
                r["total"] - _judged(r),
                _percent(r["failed"], _judged(r)),
            ]
            for label, r in zip(labels, rows, strict=True)
        ],
        clickable=bool(urls),
        note=" ".join(
            part
            for part in (
                "Click a point to list the rollouts of that upload." if urls else "",
                "An upload whose rollouts have no outcome has no point: it is left out of the"
                " chart and listed in the table."
                if left_out
                else "",
            )
            if part
        ),
        wide=True,
    )


#: Characters per line of a treemap tile's label: plotly shrinks a label until its longest
#: line fits the tile, so a long name on one line was unreadable in all but the largest.
TILE_LINE = 26


def tile_label(text: str) -> str:
    """A treemap label broken into lines at word boundaries (plotly's ``<br>``).

    Example:
        >>> tile_label("Books a flight without the user's confirmation of the fare")
        "Books a flight without the<br>user's confirmation of the<br>fare"
        >>> tile_label("short")
        'short'
    """
    return "<br>".join(textwrap.wrap(text, TILE_LINE, break_long_words=False)) or text


def _share_colour(value: float, highest: float) -> str:
    """A tile's colour, from pale to Faultline's orange by its share of the largest.

    >>> _share_colour(0, 10), _share_colour(10, 10)
    ('#fff1e8', '#c2410c')
    """
    low, high = (0xFF, 0xF1, 0xE8), (0xC2, 0x41, 0x0C)
    t = value / highest if highest > 0 else 0.0
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(low, high))


def taxonomy_treemap(misbehaviours: Iterable[Any]) -> Chart:
    """Misbehaviours sized by their share of wrong steps, grouped by taxonomy category.

    Each item needs ``name`` and ``share`` (0-1) and may have ``category``,
    ``category_group`` (e.g. MAST's three groups: a level above the categories), ``url``,
    ``steps`` (count) and ``id``; a click on a misbehaviour opens its ``url``.
    """
    items = list(misbehaviours)
    totals: dict[str, float] = {}
    labels_of: dict[str, str] = {}
    parent_of: dict[str, str] = {}
    for item in items:
        share = float(_get(item, "share") or 0.0)
        group = str(_get(item, "category_group") or "")
        category = str(_get(item, "category") or "uncategorised")
        group_id = f"group:{group}" if group else ""
        category_id = f"category:{group}/{category}"
        if group_id:
            totals[group_id] = totals.get(group_id, 0.0) + share
            labels_of[group_id] = group
            parent_of[group_id] = ""
        totals[category_id] = totals.get(category_id, 0.0) + share
        labels_of[category_id] = category
        parent_of[category_id] = group_id
    ids: list[str] = []
    labels: list[str] = []
    parents: list[str] = []
    values: list[float] = []
    links: list[str] = []
    for node, share in sorted(
        totals.items(), key=lambda kv: (kv[0].startswith("category:"), -kv[1])
    ):
        ids.append(node)
        labels.append(tile_label(labels_of[node]))
        parents.append(parent_of[node])
        values.append(100.0 * share)
        links.append("")
    table: list[list[Any]] = []
    for number, item in enumerate(items):
        group = str(_get(item, "category_group") or "")
        category = str(_get(item, "category") or "uncategorised")
        share = float(_get(item, "share") or 0.0)
        name = str(_get(item, "name") or f"misbehaviour {number + 1}")
        ids.append(f"m:{_get(item, 'id', number)}")
        labels.append(tile_label(name))
        parents.append(f"category:{group}/{category}")
        values.append(100.0 * share)
        links.append(str(_get(item, "url") or ""))
        table.append([category, name, f"{100.0 * share:.1f}%", _get(item, "steps", "")])
    figure: dict[str, Any] = {
        "data": [
            {
                "type": "treemap",
                "ids": ids,
                "labels": labels,
                "parents": parents,
                "values": values,
                "customdata": links,
                "branchvalues": "total",
                "texttemplate": "%{label}<br>%{value:.1f}% of wrong steps",
                "hovertemplate": "%{label}<br>%{value:.1f}% of wrong steps<extra></extra>",
                # Colours of our own, not a colorscale: with a colorscale plotly paints the
                # implicit root above several groups grey and ignores root.color.
                "marker": {"colors": [_share_colour(v, max(values)) for v in values]},
                "tiling": {"pad": 2},
                # The implicit root above several groups: page-coloured, not plotly's grey.
                "root": {"color": "#ffffff"},
            }
        ],
        "layout": figure_layout("Failure taxonomy: misbehaviours by share of wrong steps", "", ""),
    }
    figure["layout"]["margin"] = {"t": 48, "r": 8, "b": 8, "l": 8}
    return Chart(
        id="chart-taxonomy",
        title="Failure taxonomy",
        figure=figure,
        columns=["category", "misbehaviour", "share of wrong steps", "steps"],
        rows=table,
        height=420,
        clickable=True,
        note="Click a misbehaviour to open it; click a category to zoom in.",
    )


def action_odds_chart(summary: Mapping[str, Any]) -> Chart:
    """Odds ratio of success per extra deviation, mutating vs read-only, log scale."""
    odds = list(summary.get("odds") or [])
    names = {
        "mutating": "mutating (book, cancel, update…)",
        "read_only": "read-only (get, search…)",
    }
    labels = [names.get(o["kind"], o["kind"]) for o in odds]
    figure: dict[str, Any] = {
        "data": [
            {
                "type": "scatter",
                "mode": "markers+text",
                "y": labels,
                "x": [o["odds_ratio"] for o in odds],
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [o["high"] - o["odds_ratio"] for o in odds],
                    "arrayminus": [o["odds_ratio"] - o["low"] for o in odds],
                    "color": "#374151",
                    "thickness": 2,
                    "width": 8,
                },
                "marker": {
                    "size": 14,
                    "color": ["#b91c1c" if o["odds_ratio"] < 1 else "#047857" for o in odds],
                },
                "text": [f"{o['change_percent']:+.0f}% odds per deviation" for o in odds],
                "textposition": "top center",
                "hovertemplate": "%{y}<br>odds ratio %{x:.2f}<extra></extra>",
            }
        ],
        "layout": figure_layout(
            "Odds of success per extra deviation from the gold actions",
            "odds ratio with 95% interval (log scale; 1 = no effect)",
            "",
            shapes=[
                {
                    "type": "line",
                    "yref": "paper",
                    "x0": 1,
                    "x1": 1,
                    "y0": 0,
                    "y1": 1,
                    "line": {"dash": "dot", "color": "#6b7280"},
                }
            ],
        ),
    }
    figure["layout"]["xaxis"].update({"type": "log", "range": [-2, 0.5]})
    figure["layout"]["yaxis"].update({"type": "category", "range": [-0.6, len(odds) - 0.4]})
    rows = [
        [
            names.get(o["kind"], o["kind"]),
            f"{o['odds_ratio']:.2f}",
            f"{o['low']:.2f}–{o['high']:.2f}",
            f"{o['change_percent']:+.0f}%",
            f"{o['mean_deviations']:.2f}",
        ]
        for o in odds
    ]
    return Chart(
        id="chart-actions",
        title="Action-level analysis",
        figure=figure,
        columns=["deviation", "odds ratio", "95% interval", "change in odds", "mean per rollout"],
        rows=rows,
    )
