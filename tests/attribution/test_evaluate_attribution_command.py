"""manage.py evaluate_attribution on a small budget: report, charts and Markdown written."""

from __future__ import annotations

import json

from django.core.management import call_command

from tests.conftest import shared_file


def test_it_writes_the_report_the_markdown_and_the_charts(tmp_path):
    data = shared_file("who_and_when/Who&When")
    output = tmp_path / "attribution.md"
    call_command(
        "evaluate_attribution", "--data", str(data), "--splits", "3", "--repeats", "1",
        "--subset", "Algorithm-Generated", "--no-model-selection", "--jobs", "1", "--output", str(output),
    )  # fmt: skip
    report = json.loads((tmp_path / "attribution" / "report.json").read_text())
    subset = report["subsets"][0]
    assert subset["name"] == "Algorithm-Generated" and subset["trajectories"] == 126
    assert subset["conformal"]["n_splits"] == 3
    assert {row["alpha"] for row in subset["conformal"]["rows"]} == {0.05, 0.1, 0.2, 0.3}
    markdown = output.read_text()
    assert "python manage.py evaluate_attribution --splits 3 --repeats 1" in markdown
    assert "![coverage](attribution/coverage-algorithm-generated.svg)" in markdown
    assert (
        (tmp_path / "attribution" / "coverage-algorithm-generated.svg")
        .read_text()
        .startswith("<svg")
    )
