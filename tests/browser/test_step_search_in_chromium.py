"""Searching what the steps say, clicked through in Chromium: the rollouts list filtered by
a tool's error message on the real tau-bench airline rollouts, a row's quote opening the
rollout at the step that says it, and a long rollout whose step windows keep the search."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import log_in
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHRASE = "gift card balance is not enough"


def test_it_finds_the_rollouts_whose_steps_say_it_and_opens_the_step(page, browser_user, project):
    from ingest.selectors import steps_saying

    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    saying = project.trajectories.filter(pk__in=steps_saying(PHRASE).values("trajectory_id"))
    assert 0 < saying.count() < project.trajectories.count()

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/")
    page.fill("#f-says", PHRASE.upper())
    page.click("#rollout-filters button[type=submit]")
    page.wait_for_url(re.compile(r".*says=GIFT.*"))
    assert page.locator("#match-count").inner_text().startswith(f"{saying.count()} rollout")
    shown = page.locator("#rollouts tbody tr td:first-child a").all_inner_texts()
    assert sorted(shown) == sorted(saying.values_list("external_id", flat=True))
    first_row = page.locator("#rollouts tbody tr").first
    assert first_row.locator("mark").inner_text().lower() == PHRASE

    first_row.locator("td.quote-cell a").click()
    page.wait_for_url(re.compile(r".*/rollouts/\d+/\?from=0&says=.*#step-\d+$"))
    index = int(page.url.rsplit("#step-", 1)[1])
    step = page.locator(f"#step-{index}")
    assert "said" in (step.get_attribute("class") or "")
    assert PHRASE in step.inner_text().lower()
    assert re.match(r"\d+ steps? say", page.locator("#said-steps").inner_text())
    assert page.errors == []


def test_a_long_rollouts_step_windows_keep_the_search(page, browser_user, project):
    steps = [{"role": "user", "content": "start"}] + [
        {"role": "assistant", "content": f"step {i}"} for i in range(1, 450)
    ]
    steps[420]["content"] = "the needle is here"
    steps[3]["content"] = "another needle"
    line = json.dumps({"id": "long", "outcome": "failure", "steps": steps}) + "\n"
    ingest_bytes(project, line.encode(), "long.jsonl")
    rollout = project.trajectories.get(external_id="long")

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/?says=needle")
    assert page.locator("td.quote-cell a").inner_text() == "step 3"
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/?says=needle")
    listed = page.locator("#said-steps a[data-jump]").all_inner_texts()
    assert listed == ["#3", "#420"]
    # Step 420 is in the next window: the jump opens it and the search stays in the URL.
    page.click("#said-steps a[data-jump='420']")
    page.wait_for_url(re.compile(r".*from=400.*#step-420$"))
    assert "says=needle" in page.url
    assert "said" in (page.locator("#step-420").get_attribute("class") or "")
    page.locator(".window-nav a", has_text="0–399").first.click()
    page.wait_for_url(re.compile(r".*from=0.*"))
    assert "says=needle" in page.url
    assert "said" in (page.locator("#step-3").get_attribute("class") or "")
    assert page.errors == []
