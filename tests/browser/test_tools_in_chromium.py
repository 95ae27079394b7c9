"""The overview's tools table and the rollouts filters by tool and error step, clicked
through in Chromium on the real tau-bench airline rollouts."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import log_in
from tests.conftest import ingest_file, shared_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_opens_a_tools_rollouts_from_the_overview_and_narrows_them_to_errors(
    page, browser_user, project
):
    from ingest.models import Step
    from pipeline.overview_counts import overview_counts_rebuild

    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    overview_counts_rebuild(project_id=project.pk)
    calling = project.trajectories.filter(steps__tool_name="book_reservation").distinct()
    with_error = project.trajectories.filter(
        steps__tool_name="book_reservation", steps__is_error=True
    ).distinct()
    assert 0 < with_error.count() < calling.count()  # the data must tell the filters apart

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/")
    table = page.locator("#tools-table")
    table.wait_for()
    row = table.locator("tr", has=page.locator("code", has_text=re.compile("^book_reservation$")))
    assert row.count() == 1
    row.locator("a").first.click()
    page.wait_for_url(re.compile(r".*/rollouts/\?tool=book_reservation$"))
    assert page.locator("#f-tool").input_value() == "book_reservation"
    count = page.locator("#match-count").inner_text()
    assert count.startswith(f"{calling.count()} rollout")

    page.select_option("#f-errors", "yes")
    page.click("#rollout-filters button[type=submit]")
    page.wait_for_url(re.compile(r".*errors=yes.*"))
    assert page.locator("#match-count").inner_text().startswith(f"{with_error.count()} rollout")
    shown = set(page.locator("#rollouts tbody a").all_inner_texts())
    expected = set(with_error.values_list("external_id", flat=True))
    assert shown and shown <= expected
    assert Step.objects.filter(trajectory__project=project, is_error=True).exists()
    assert page.errors == []


def test_the_tools_table_sorts_by_a_column_and_shows_every_tool(page, browser_user, project):
    from pipeline.models import ProjectOverview
    from pipeline.overview_counts import overview_counts_rebuild

    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    overview_counts_rebuild(project_id=project.pk)
    rows = ProjectOverview.objects.get(project=project).data["tools"]
    assert len(rows) > 12  # more than the table shows before "Show all"

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/")
    table = page.locator("#tools-table")
    table.wait_for()
    assert table.locator("tbody tr:visible").count() == 12
    more = page.locator("button[data-expands=tools-table]")
    assert more.inner_text() == f"Show all {len(rows)}"
    page.click("#tools-table th:nth-child(3) button.sort")  # errors, most first
    assert page.locator("#tools-table th:nth-child(3)").get_attribute("aria-sort") == "descending"
    assert table.locator("tbody tr:visible").count() == len(rows)  # sorting shows them all
    assert more.count() == 0
    most = max(rows, key=lambda row: row["errors"])
    assert table.locator("tbody tr").first.locator("code").inner_text() == most["tool"]
    page.click("#tools-table th:nth-child(3) button.sort")
    assert page.locator("#tools-table th:nth-child(3)").get_attribute("aria-sort") == "ascending"
    errors = [
        int(value)
        for value in table.locator("tbody tr td:nth-child(3)").evaluate_all(
            "cells => cells.map(c => c.dataset.value)"
        )
    ]
    assert errors == sorted(errors)
    page.click("#tools-table th:nth-child(1) button.sort")  # by name, A to Z
    names = table.locator("tbody tr code").all_inner_texts()
    assert names == sorted(names, key=str.lower)
    assert page.errors == []
