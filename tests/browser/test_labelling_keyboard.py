"""Keyboard labelling in a real browser: open a rollout from the labelling queue, move with
j/k, mark the focused step decisive with d (the label is stored), go on with n."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queue(project):
    """Four unlabelled failed rollouts of one agent system, attributed."""
    from attribution.models import TrajectoryAttribution
    from attribution.services import project_attribution_refresh
    from tests.attribution.conftest import make_rollout, make_upload

    upload = make_upload(project)
    for _ in range(4):
        make_rollout(project, upload=upload, length=6, bad_step=2, label=False)
    project_attribution_refresh(project_id=project.pk)
    return list(
        TrajectoryAttribution.objects.filter(project=project, queue_rank__isnull=False)
        .order_by("queue_rank")
        .values_list("trajectory_id", flat=True)
    )


def _keys(page, *presses):
    """Press each key; where a step is given, wait until that step has the focus."""
    for key, step in presses:
        page.keyboard.press(key)
        if step is not None:
            page.wait_for_selector(f"#step-{step}.focused")


def test_it_labels_from_the_keyboard_and_goes_to_the_next_rollout(
    page, browser_user, project, queue
):
    from ingest.models import Label

    first, second = queue[0], queue[1]
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/attribution/labelling/")
    page.locator(f'.queue-entry[data-rollout="{first}"] a').click()
    page.wait_for_url(re.compile(rf".*/rollouts/{first}/.*"))
    assert page.locator("#label-keys").is_visible()
    # Opened to label: the scorer's first pick has the focus, so j/k move from there.
    top = int(page.locator("#attribution").get_attribute("data-top-step"))
    page.wait_for_selector(f"#step-{top}.focused")
    _keys(page, *[("k", step) for step in range(top - 1, -1, -1)])
    _keys(page, ("j", 1), ("j", 2), ("k", 1), ("j", 2))
    page.keyboard.press("d")
    page.wait_for_selector(".message.success")
    label = Label.objects.get(trajectory_id=first)
    assert (label.step_index, label.source, label.reason) == (2, "human", "")
    assert label.author.get_username() == browser_user.get_username()
    # A second d on another step moves the label: one person, one label per rollout.
    _keys(page, ("k", 1))  # the panel was swapped in, not the page reloaded: step 2 kept the focus
    page.keyboard.press("d")
    page.wait_for_selector("text=Your label moved from step 2 to step 1.")
    assert list(Label.objects.filter(trajectory_id=first).values_list("step_index", flat=True)) == [
        1
    ]
    page.locator(".attribution-labels button", has_text="remove").click()
    page.wait_for_selector("text=Label of step 1 removed.")
    assert not Label.objects.filter(trajectory_id=first).exists()
    page.keyboard.press("n")
    page.wait_for_url(re.compile(rf".*/rollouts/{second}/.*"))
    second_top = page.locator("#attribution").get_attribute("data-top-step")
    page.wait_for_selector(f"#step-{second_top}.focused")
    # Opened otherwise (no #attribution): nothing has the focus, and d says what to do.
    page.goto(page.url.split("#")[0])
    page.keyboard.press("d")
    assert "pick a step with j or k" in page.locator("#label-keys-status").inner_text()
    assert not Label.objects.filter(trajectory_id=second).exists()
    assert page.errors == []
