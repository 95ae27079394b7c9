"""The step list's marks of labelled steps follow keyboard labelling without a reload: a
label saved with d marks its step, moving the label moves the mark, removing it clears it.

It lives with the browser tests for their session's Chromium."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in, wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rollout(unlabelled_rollout):
    return unlabelled_rollout


def _marked(page) -> list[tuple[str, str]]:
    """(step, badge text) of every step the list marks labelled."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('#steps .step.labelled')).map(
             s => [s.dataset.step, (s.querySelector('.step-flags .badge.label') || {}).textContent || ''])"""
    )


def test_the_step_marks_follow_the_labels(page, browser_user, project, rollout):
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    wait_for_charts(page)
    assert _marked(page) == [] and page.locator("#steps .badge.label").count() == 0
    for step in (0, 1, 2):
        page.keyboard.press("j")
        page.wait_for_selector(f"#step-{step}.focused")

    page.keyboard.press("d")
    page.wait_for_selector("#attribution >> text=Label saved: step 2.")
    assert _marked(page) == [["2", "labelled decisive step"]]

    page.keyboard.press("k")
    page.wait_for_selector("#step-1.focused")
    page.keyboard.press("d")
    page.wait_for_selector("#attribution >> text=Your label moved from step 2 to step 1.")
    assert _marked(page) == [["1", "labelled decisive step"]]
    assert page.locator("#steps .badge.label").count() == 1

    page.locator("#attribution .attribution-labels button", has_text="remove").click()
    page.wait_for_selector("#attribution >> text=Label of step 1 removed.")
    assert _marked(page) == [] and page.locator("#steps .badge.label").count() == 0
    # The reloaded page agrees with what the script drew.
    page.keyboard.press("d")
    page.wait_for_selector("#attribution >> text=Label saved: step 1.")
    drawn = _marked(page)
    page.reload()
    wait_for_charts(page)
    assert _marked(page) == drawn == [["1", "labelled decisive step"]]
    assert page.errors == []
