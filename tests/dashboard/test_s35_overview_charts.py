"""The overview's heatmap and upload chart say truthfully what they show."""

from __future__ import annotations

from dashboard import charts
from pipeline.overview import UPLOADS_SHOWN


def _upload(number: int, *, failed: int = 1, succeeded: int = 1) -> dict[str, object]:
    return {
        "id": number,
        "original_name": f"run-{number}.json",
        "total": failed + succeeded,
        "failed": failed,
        "succeeded": succeeded,
    }


def test_it_names_each_upload_by_its_number_not_its_place():
    chart = charts.failure_rate_over_uploads([_upload(140), _upload(151)])
    assert chart.figure["data"][0]["x"] == ["#140", "#151"]
    assert chart.figure["layout"]["xaxis"]["type"] == "category"
    assert chart.figure["layout"]["title"]["text"] == "Failure rate over uploads"


def test_it_says_when_it_shows_only_the_newest_uploads():
    rows = [_upload(n) for n in range(100, 100 + UPLOADS_SHOWN)]
    title = charts.failure_rate_over_uploads(rows).figure["layout"]["title"]["text"]
    assert title == f"Failure rate over the newest {UPLOADS_SHOWN} uploads"


def test_it_leaves_out_uploads_without_an_outcome_and_says_so():
    rows = [_upload(1), _upload(2, failed=0, succeeded=0), _upload(3, failed=2, succeeded=0)]
    rows[1]["total"] = 5
    chart = charts.failure_rate_over_uploads(rows, urls=["/u/1", "/u/2", "/u/3"])
    trace = chart.figure["data"][0]
    assert trace["x"] == ["#1", "#3"] and trace["y"] == [50.0, 100.0]
    assert [point[0] for point in trace["customdata"]] == ["/u/1", "/u/3"]
    assert "(1 without an outcome left out)" in chart.figure["layout"]["title"]["text"]
    assert len(chart.rows) == 3


def test_the_heatmap_does_not_hover_over_empty_combinations():
    rows = [
        {"environment": "airline", "policy_model": "gpt-4o", "total": 4, "failed": 1},
        {"environment": "retail", "policy_model": "o3", "total": 2, "failed": 2},
    ]
    trace = charts.failure_heatmap(rows).figure["data"][0]
    assert trace["hoverongaps"] is False
    assert trace["z"][0][1] is None


def test_the_heatmap_shortens_long_labels_and_keeps_the_full_name_for_the_hover():
    long_model = "mistral/mistral-small-latest"
    long_environment = "an-environment-with-a-very-long-name"
    rows = [{"environment": long_environment, "policy_model": long_model, "total": 1, "failed": 1}]
    figure = charts.failure_heatmap(rows).figure
    xaxis, yaxis = figure["layout"]["xaxis"], figure["layout"]["yaxis"]
    assert xaxis["ticktext"] == ["mistral/mistral-s…"] and xaxis["tickvals"] == [long_model]
    assert yaxis["ticktext"][0].endswith("…") and len(yaxis["ticktext"][0]) == 18
    assert figure["data"][0]["x"] == [long_model]  # the hover's %{x} is the full name
    assert xaxis["automargin"] and yaxis["automargin"]
