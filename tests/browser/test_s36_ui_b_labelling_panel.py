"""The attribution panel follows keyboard labelling without a reload: after d (and after a
label's remove button) the panel the server renders is swapped in, the focused step keeps
its focus, and the keys go on working.

It lives with the browser tests for their session's Chromium (a second Playwright in the
process fails inside the first one's event loop)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in, wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOT_RELOADED = "() => window.s36NotReloaded === true"


@pytest.fixture
def rollout(unlabelled_rollout):
    return unlabelled_rollout


def _to_step(page, key, step):
    page.keyboard.press(key)
    page.wait_for_selector(f"#step-{step}.focused")


def _panel_labels(page) -> list[str]:
    return page.locator("#attribution .attribution-labels a[data-jump]").all_inner_texts()


def test_it_swaps_in_the_new_panel_after_d_without_a_reload(page, browser_user, project, rollout):
    from ingest.models import Label

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    wait_for_charts(page)
    assert _panel_labels(page) == []
    page.evaluate("() => { window.s36NotReloaded = true; }")
    for step in (0, 1, 2):
        _to_step(page, "j", step)

    page.keyboard.press("d")
    page.wait_for_selector("#attribution .message.success >> text=Label saved: step 2.")
    assert _panel_labels(page) == ["step 2"]
    assert page.evaluate(NOT_RELOADED)
    assert page.locator("#step-2.focused").count() == 1
    chart = page.locator("#attribution .chart[data-rendered='true']")
    assert chart.count() == 1 and chart.locator("svg.main-svg").count() > 0
    assert Label.objects.get(trajectory=rollout).step_index == 2

    # The focused step still answers the keys: a second d moves the label.
    _to_step(page, "k", 1)
    page.keyboard.press("d")
    page.wait_for_selector("#attribution >> text=Your label moved from step 2 to step 1.")
    assert _panel_labels(page) == ["step 1"]
    assert page.evaluate(NOT_RELOADED)

    # Removing goes the same way; the panel takes the focus its remove button had.
    page.locator("#attribution .attribution-labels button", has_text="remove").click()
    page.wait_for_selector("#attribution >> text=Label of step 1 removed.")
    assert _panel_labels(page) == []
    assert page.evaluate("() => document.activeElement.id") == "attribution"
    assert page.evaluate(NOT_RELOADED)
    assert not Label.objects.filter(trajectory=rollout).exists()
    _to_step(page, "j", 2)
    page.keyboard.press("d")
    page.wait_for_selector("#attribution >> text=Label saved: step 2.")
    assert _panel_labels(page) == ["step 2"]
    assert page.evaluate(NOT_RELOADED)
    assert page.errors == []


def test_the_answer_floats_in_view_when_the_panel_is_out_of_sight(
    page, browser_user, project, rollout
):
    log_in(page, browser_user)
    # A short window: the panel, above the steps, scrolls out of view at the last step.
    page.set_viewport_size({"width": 1000, "height": 300})
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    wait_for_charts(page)
    for step in range(6):
        _to_step(page, "j", step)
    assert page.evaluate(
        "() => document.getElementById('attribution').getBoundingClientRect().bottom <= 0"
    )
    page.keyboard.press("d")
    echo = page.locator("#label-echo")
    echo.wait_for(state="visible")
    assert echo.inner_text().startswith("Label saved: step 5.")
    assert "floating-message" in echo.get_attribute("class")
    # It goes away by itself.
    echo.wait_for(state="hidden", timeout=8000)
    assert page.errors == []
