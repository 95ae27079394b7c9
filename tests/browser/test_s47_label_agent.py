"""The rollout page's label form records the agent of the step chosen: a user who changed
only the step of the form (its Agent pre-filled with the scorer's agent) saved that agent
beside a step another agent took, and nothing on the page said so."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import log_in, wait_for_charts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rollout(unlabelled_rollout):
    return unlabelled_rollout


def _agent_of(step: int) -> str:
    return "Planner" if step % 2 else "WebSurfer"


def _open_form(page, project, rollout):
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    wait_for_charts(page)
    page.locator("#label-form-box summary").click()


def _listed(page) -> str:
    return " ".join(page.locator("#attribution .attribution-labels li").first.inner_text().split())


def test_changing_only_the_step_saves_that_steps_agent(page, browser_user, project, rollout):
    from attribution.models import TrajectoryAttribution
    from ingest.models import Label

    scorer_agent = TrajectoryAttribution.objects.get(trajectory=rollout).agent
    step = next(i for i in range(1, 6) if _agent_of(i) != scorer_agent)
    log_in(page, browser_user)
    _open_form(page, project, rollout)
    agent = page.locator("#label-form input[name=agent]")
    assert agent.input_value() == ""
    assert agent.get_attribute("placeholder") == "the step’s own"
    page.locator("#label-form input[name=step_index]").fill(str(step))
    page.locator("#label-form button[type=submit]").click()
    page.wait_for_selector(f"#attribution .message.success >> text=Label saved: step {step}.")
    assert _listed(page).startswith(f"step {step} by {_agent_of(step)}")
    assert Label.objects.get(trajectory=rollout).agent == _agent_of(step)
    assert page.errors == []


def test_an_agent_typed_beside_another_agents_step_is_kept_and_said(
    page, browser_user, project, rollout
):
    from ingest.models import Label

    log_in(page, browser_user)
    _open_form(page, project, rollout)
    page.locator("#label-form input[name=step_index]").fill("3")
    page.locator("#label-form input[name=agent]").fill("WebSurfer")
    page.locator("#label-form button[type=submit]").click()
    warning = page.locator("#attribution .message.warning")
    warning.wait_for()
    assert re.search(
        r"It names WebSurfer as the agent at fault, though step 3 is Planner’s",
        warning.inner_text(),
    )
    assert _listed(page).startswith("step 3 · WebSurfer at fault, though the step is Planner’s")
    assert Label.objects.get(trajectory=rollout).agent == "WebSurfer"
    # The panel swapped in starts empty again: nothing typed before is sent with the next.
    page.locator("#label-form-box summary").click()
    assert page.locator("#label-form input[name=agent]").input_value() == ""
    assert page.errors == []


def test_the_keyboard_and_the_form_agree_on_the_agent(page, browser_user, project, rollout):
    from ingest.models import Label

    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    wait_for_charts(page)
    for step in range(4):
        page.keyboard.press("j")
        page.wait_for_selector(f"#step-{step}.focused")
    page.keyboard.press("d")
    page.wait_for_selector("#attribution .message.success >> text=Label saved: step 3.")
    assert Label.objects.get(trajectory=rollout).agent == _agent_of(3)
    assert page.errors == []
