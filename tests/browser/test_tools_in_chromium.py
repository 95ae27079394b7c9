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
