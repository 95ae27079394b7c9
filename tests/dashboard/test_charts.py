"""Figure builders: plain dicts with a title, axis titles and the numbers as a table."""

from __future__ import annotations

import json

import pytest

from dashboard import charts, rollout_charts


def _titles(chart: charts.Chart) -> tuple[str, str, str]:
    layout = chart.figure["layout"]
    return (
        layout["title"]["text"],
        layout.get("xaxis", {}).get("title", {}).get("text", ""),
        layout.get("yaxis", {}).get("title", {}).get("text", ""),
    )


def test_it_builds_the_failure_heatmap_with_rates_and_counts():
    chart = charts.failure_heatmap(
        [
            {"environment": "airline", "policy_model": "gpt-4o", "total": 4, "failed": 3},
            {"environment": "retail", "policy_model": "gpt-4o", "total": 2, "failed": 0},
            {"environment": "retail", "policy_model": "claude", "total": 5, "failed": 5},
        ]
    )
    trace = chart.figure["data"][0]
    assert trace["x"] == ["claude", "gpt-4o"] and trace["y"] == ["airline", "retail"]
    assert trace["z"] == [[None, 75.0], [100.0, 0.0]]
    assert _titles(chart) == (
        "Failure rate by environment and policy model",
        "policy model",
        "environment",
    )
    assert ["airline", "gpt-4o", 4, 3, 0, "75.0%"] in chart.rows


def test_it_normalises_decisive_positions_per_series():
    chart = charts.decisive_position_histogram({"labelled": [1, 1, 2, 0, 0, 0, 0, 0, 0, 0]})
    trace = chart.figure["data"][0]
    assert trace["y"][:3] == [25.0, 25.0, 50.0]
    assert trace["name"] == "labelled (n=4)"
    assert all(_titles(chart))
    assert chart.rows[2] == ["20–30%", 2]


def test_it_links_each_upload_point_to_its_rollouts():
    rows = [
        {"id": 7, "original_name": "a.json", "total": 4, "failed": 1},
        {"id": 9, "original_name": "b.json", "total": 2, "failed": 2},
    ]
    chart = charts.failure_rate_over_uploads(
        rows, urls=["/p/x/rollouts/?upload=7", "/p/x/rollouts/?upload=9"]
    )
    trace = chart.figure["data"][0]
    assert trace["y"] == [25.0, 100.0]
    assert trace["customdata"][0][0] == "/p/x/rollouts/?upload=7"
    assert chart.clickable and all(_titles(chart))


def test_upload_ticks_fall_on_whole_uploads():
    rows = [{"id": n, "original_name": "a.json", "total": 2, "failed": 1} for n in (4, 9)]
    figure = charts.failure_rate_over_uploads(rows).figure
    assert figure["layout"]["xaxis"]["type"] == "category"
    assert figure["data"][0]["x"] == ["#4", "#9"]


def test_it_groups_misbehaviours_by_category_in_the_treemap():
    chart = charts.taxonomy_treemap(
        [
            {
                "id": 1,
                "name": "books before confirming",
                "category": "FM-2.6",
                "share": 0.3,
                "url": "/m/1",
            },
            {"id": 2, "name": "repeats search", "category": "FM-1.3", "share": 0.1, "url": "/m/2"},
            {"id": 3, "name": "wrong passenger", "category": "FM-2.6", "share": 0.2, "url": "/m/3"},
        ]
    )
    trace = chart.figure["data"][0]
    assert trace["type"] == "treemap"
    parents = dict(zip(trace["ids"], trace["parents"]))
    assert parents["m:1"] == parents["m:3"] == "category:/FM-2.6"
    values = dict(zip(trace["ids"], trace["values"]))
    assert abs(values["category:/FM-2.6"] - 50.0) < 1e-9
    assert dict(zip(trace["ids"], trace["customdata"]))["m:2"] == "/m/2"
    assert chart.clickable and len(chart.rows) == 3


def test_treemap_tiles_break_long_names_into_lines_and_the_table_keeps_them_whole():
    name = "Changes a flight with a payment method the user does not hold"
    chart = charts.taxonomy_treemap([{"id": 1, "name": name, "category": "FM-2.6", "share": 1}])
    label = dict(zip(chart.figure["data"][0]["ids"], chart.figure["data"][0]["labels"]))["m:1"]
    assert label.replace("<br>", " ") == name
    assert all(len(line) <= charts.TILE_LINE for line in label.split("<br>"))
    assert chart.rows[0][1] == name


def test_it_puts_taxonomy_groups_above_their_categories():
    chart = charts.taxonomy_treemap(
        [
            {
                "id": 1,
                "name": "a",
                "category": "Step repetition",
                "category_group": "Specification",
                "share": 0.2,
            },
            {
                "id": 2,
                "name": "b",
                "category": "Task derailment",
                "category_group": "Misalignment",
                "share": 0.1,
            },
            {"id": 3, "name": "c", "category": "", "share": 0.05},
        ]
    )
    trace = chart.figure["data"][0]
    parents = dict(zip(trace["ids"], trace["parents"]))
    assert parents["category:Specification/Step repetition"] == "group:Specification"
    assert parents["m:1"] == "category:Specification/Step repetition"
    assert parents["category:/uncategorised"] == ""
    # Every parent is a node of the figure (plotly drops orphans silently).
    assert all(p == "" or p in parents for p in parents.values())


def test_it_draws_the_odds_ratios_with_their_intervals():
    summary = {
        "odds": [
            {
                "kind": "mutating",
                "odds_ratio": 0.2,
                "low": 0.1,
                "high": 0.4,
                "change_percent": -80.0,
                "mean_deviations": 1.5,
            },
            {
                "kind": "read_only",
                "odds_ratio": 0.9,
                "low": 0.8,
                "high": 1.0,
                "change_percent": -10.0,
                "mean_deviations": 3.0,
            },
        ]
    }
    chart = charts.action_odds_chart(summary)
    trace = chart.figure["data"][0]
    assert trace["x"] == [0.2, 0.9]
    assert trace["error_x"]["arrayminus"][0] == 0.1
    assert chart.figure["layout"]["xaxis"]["type"] == "log"
    assert chart.rows[0][2] == "0.10–0.40"


def test_it_puts_each_agent_in_its_lane_and_marks_the_set():
    steps = [
        (0, "Planner", "message", False),
        (1, "WebSurfer", "tool_call", True),
        (2, "Planner", "message", False),
    ]
    chart = rollout_charts.agent_lanes(steps, prediction_set=(1, 2), rollback_step=1)
    marks = {(t["name"], tuple(t["x"])) for t in chart.figure["data"] if t["name"] != "error"}
    assert marks == {("Planner", (0, 2)), ("WebSurfer", (1,))}
    assert chart.figure["layout"]["yaxis"]["ticktext"] == ["Planner", "WebSurfer"]
    errors = next(t for t in chart.figure["data"] if t["name"] == "error")
    assert errors["x"] == [1]
    band = chart.figure["layout"]["shapes"][0]
    assert (band["x0"], band["x1"]) == (0.5, 2.5)
    assert chart.click_kind == "step"


def test_it_ticks_every_step_of_a_short_rollout_and_leaves_long_ones_to_plotly():
    short = rollout_charts.agent_lanes([(i, "a", "message", False) for i in range(5)])
    assert short.figure["layout"]["xaxis"]["dtick"] == 1
    long = rollout_charts.agent_lanes([(i, "a", "message", False) for i in range(400)])
    assert "dtick" not in long.figure["layout"]["xaxis"]


def test_it_shades_the_window_of_steps_listed_on_the_page():
    steps = [(i, "a", "message", False) for i in range(1000)]
    chart = rollout_charts.agent_lanes(steps, shown=(400, 799))
    window = chart.figure["layout"]["shapes"][0]
    assert (window["x0"], window["x1"]) == (399.5, 799.5)


def test_every_figure_is_json():
    chart = charts.failure_heatmap(
        [{"environment": "e", "policy_model": "m", "total": 1, "failed": 1}]
    )
    assert json.loads(json.dumps(chart.figure)) == chart.figure


@pytest.mark.parametrize("count", [5, 40, 400, 5000])
def test_the_step_axis_starts_at_the_first_step_not_before(count):
    steps = [(i, "a", "message", i == 0) for i in range(count)]
    chart = rollout_charts.agent_lanes(steps, prediction_set=(0, 1), rollback_step=0)
    low, high = chart.figure["layout"]["xaxis"]["range"]
    # Room for the rollback line drawn before step 0, never step -1; marks drawn whole.
    assert (low, high) == (-0.6, count - 1 + 0.6)
    assert all(trace["cliponaxis"] is False for trace in chart.figure["data"])
