"""The calibration, labelling-queue and exports pages fit a 400px-wide window.

Their tables scroll inside the page's table wrapper, and the export form's single column
shrinks to the window: at 400px the calibration page was 733px wide (its tables had no
wrapper), the labelling queue 763px, and a long environment or model name in the export
form's selects made the exports page 503px wide.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from ingest.core.vocabulary import model_name
from tests.browser.conftest import log_in
from tests.browser.test_hostile_content import OVERFLOWING
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NARROW = {"width": 400, "height": 800}
LONG_NAME = "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0-cross-region-inference-eu-west-1"


def _width_problem(page, path: str) -> str:
    """'' when the page fits the window, else how wide it is and what reaches past it."""
    page.goto(page.base + path)
    page.wait_for_load_state("load")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    if width <= NARROW["width"]:
        return ""
    return f"{path} is {width}px wide: {page.evaluate(OVERFLOWING, NARROW['width'])}"


@pytest.fixture
def demo_project(project):
    """tau-bench airline and twelve Who&When runs, calibrated and exported for real."""
    from exports.core.filters import parse_filters
    from exports.services import export_create, export_run
    from pipeline.tasks import refresh_project
    from projects.models import Project

    Project.objects.filter(pk=project.pk).update(gold_actions_calibrate=True)
    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    for name in range(1, 13):
        ingest_file(project, shared_file(f"who_and_when/Who&When/Hand-Crafted/{name}.json"))
    refresh_project(project.pk)
    job = export_create(project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False)
    export_run(job_id=job.pk)
    return project


def test_it_fits_the_calibration_queue_and_exports_pages_in_400px(page, browser_user, demo_project):
    slug = demo_project.slug
    log_in(page, browser_user)
    page.set_viewport_size(NARROW)
    page.goto(page.base + reverse("attribution:calibration", args=[slug]))
    assert page.locator("#calibration-summary").count() == 1, "no calibration to show"
    problems = [
        _width_problem(page, reverse(name, args=[slug]))
        for name in ("attribution:calibration", "attribution:labelling_queue", "exports:index")
    ]
    assert [p for p in problems if p] == []
    assert page.errors == []


def test_a_long_environment_or_model_name_does_not_widen_the_export_form(
    page, browser_user, project
):
    line = {
        "id": "long-names",
        "outcome": "failure",
        "environment": LONG_NAME.replace("/", "-"),
        "policy_model": LONG_NAME,
        "steps": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "bye"}],
    }
    ingest_bytes(project, (json.dumps(line) + "\n").encode(), "long.jsonl")
    log_in(page, browser_user)
    page.set_viewport_size(NARROW)
    assert _width_problem(page, reverse("exports:index", args=[project.slug])) == ""
    # Stored without its provider prefix (ingest.core.vocabulary.model_name), still long.
    stored = model_name(LONG_NAME)
    assert len(stored) > 70
    assert page.locator("#policy_model option", has_text=stored).count() == 1
