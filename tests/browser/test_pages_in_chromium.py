"""The dashboard in a real browser: upload, overview, rollout viewer, comparison."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import log_in, wait_for_charts
from tests.conftest import ingest_bytes, ingest_file, shared_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _demo(project, *, refresh: bool = True):
    """tau-bench airline and a few Who&When runs, attributed and clustered for real."""
    from attribution.action_analysis import project_action_analysis_refresh
    from pipeline.tasks import refresh_project

    ingest_file(project, shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json"))
    for name in ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"):
        ingest_file(project, shared_file(f"who_and_when/Who&When/Hand-Crafted/{name}.json"))
    if refresh:
        refresh_project(project.pk)
    else:
        project_action_analysis_refresh(project_id=project.pk)


def test_it_uploads_a_file_and_shows_its_progress_until_done(page, browser_user, project):
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/uploads/")
    page.set_input_files("#files", str(shared_file("who_and_when/Who&When/Hand-Crafted/1.json")))
    page.click("#upload-form button[type=submit]")
    item = page.locator(".upload-item").first
    item.wait_for()
    page.wait_for_selector(".upload-item[data-state=done]", timeout=60_000)
    assert (
        page.locator(".upload-item .progress .bar").first.evaluate("e => e.style.width") == "100%"
    )
    assert "1 rollout," in item.inner_text()
    assert project.trajectories.count() == 1
    # The table below, empty when the page loaded, now lists the upload.
    page.wait_for_selector("#all-uploads #uploads tr[data-upload]", timeout=10_000)
    assert "1.json" in page.locator("#all-uploads #uploads").inner_text()
    assert page.errors == []


def test_it_opens_a_rollouts_window_and_step_from_a_deep_link(page, browser_user, project):
    steps = [
        {"role": "assistant", "agent": f"agent{i % 2}", "content": f"step {i}"} for i in range(1000)
    ]
    line = {"id": "long", "outcome": "failure", "steps": steps}
    rollout = ingest_bytes(
        project, (json.dumps(line) + "\n").encode(), "long.jsonl"
    ).trajectories.get()
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/#step-850")
    page.wait_for_url(re.compile(r".*from=800#step-850$"))
    page.wait_for_selector("#step-850.focused")
    page.keyboard.press("j")
    page.wait_for_selector("#step-851.focused")
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.wait_for_selector("#step-849.focused")
    wait_for_charts(page)  # the agent lanes
    assert page.errors == []


def test_it_shows_the_prediction_set_jumps_to_the_rollback_point_and_adds_a_label(
    page, browser_user, project
):
    _demo(project)
    from attribution.selectors import attribution_panel

    rollout = project.trajectories.get(external_id="Hand-Crafted-1")
    assert attribution_panel(rollout) is not None
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    assert page.locator(".step.in-set").count() >= 1
    page.get_by_role("link", name="Jump to rollback point").click()
    page.wait_for_selector(".step.rollback.focused")
    assert re.search(r"#step-\d+$", page.url)
    wait_for_charts(page)  # probability strip and agent lanes

    before = rollout.labels.count()
    page.locator(".attribution-label-form summary").click()
    form = page.locator(".attribution-label-form form")
    form.locator("input[name=step_index]").fill("3")
    form.locator("textarea[name=reason]").fill("Clicked the wrong link")
    # The panel's form is sent by labelling.js, which swaps in the panel the server renders
    # after the label is saved (attribution:rollout_panel) instead of reloading the page.
    with page.expect_response(lambda r: r.url.endswith("/panel/") and r.ok):
        form.locator("button[type=submit]").click()
    page.wait_for_selector("#attribution .message.success")
    assert rollout.labels.count() == before + 1
    assert page.errors == []


def test_it_opens_a_misbehaviour_from_the_treemap(page, browser_user, project):
    _demo(project)
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/")
    rendered = wait_for_charts(page)
    assert rendered >= 4  # heatmap, decisive positions, uploads, action odds (+ taxonomy)
    assert page.errors == []
    if page.locator("#chart-taxonomy").count() == 0:
        pytest.skip("the analysis app has no misbehaviours to show yet")
    figure = json.loads(page.locator("#chart-taxonomy-data").text_content())
    urls = [u for u in figure["data"][0]["customdata"] if u]
    # A category first zooms in; a misbehaviour inside it then opens its page.
    for _ in range(3):
        slices = page.locator("#chart-taxonomy g.slice")
        slices.nth(slices.count() - 1).click()
        page.wait_for_timeout(500)
        if any(page.url.endswith(u) for u in urls):
            break
    assert any(page.url.endswith(u) for u in urls), page.url
    assert page.errors == []


def test_it_compares_two_rollouts_of_one_task(page, browser_user, project):
    _demo(project, refresh=False)
    rollout = project.trajectories.get(external_id="airline-task1-trial0")
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/")
    page.click("#compare-link")
    page.wait_for_selector("#divergence")
    assert "airline-task1-trial1" in page.locator("#divergence").inner_text()
    assert page.locator(".compare-row.diverge-action").count() == 1
    page.locator("#divergence a").last.click()
    assert re.search(r"#row-\d+$", page.url)
    assert page.errors == []
    # In one column (a phone), each cell names its rollout: the header row named both.
    assert not page.locator(".compare-side").first.is_visible()
    page.set_viewport_size({"width": 400, "height": 800})
    sides = page.locator(".compare-row").nth(1).locator(".compare-side").all_inner_texts()
    assert sides == ["airline-task1-trial0", "airline-task1-trial1"]


def test_the_first_tab_offers_to_skip_to_the_content_and_focus_is_visible(
    page, browser_user, project
):
    log_in(page, browser_user)
    page.goto(f"{page.base}/p/{project.slug}/")
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    assert skip.evaluate("el => el === document.activeElement")
    assert skip.is_visible() and skip.inner_text() == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    # The next Tab lands in the page, past the top bar's links, with a dark ring.
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const el = document.activeElement; const s = getComputedStyle(el);"
        " return [el.closest('header') === null, s.outlineStyle, s.outlineColor]; }"
    )
    assert focused == [True, "solid", "rgb(29, 78, 216)"]


def test_charts_on_a_phone_put_their_legend_under_the_plot(page, browser_user, project):
    # At 400px the map's legend lay over its points, the decisive-step chart's legend over
    # its axis title, and long titles were cut off.
    _demo(project)
    log_in(page, browser_user)
    page.set_viewport_size({"width": 400, "height": 900})
    for path in (f"/p/{project.slug}/", f"/p/{project.slug}/misbehaviours/map/"):
        page.goto(page.base + path)
        wait_for_charts(page)
        boxes = page.evaluate(
            """() => Array.from(document.querySelectorAll('.chart[data-rendered]')).map(gd => {
                const legend = gd.querySelector('.legend');
                const plot = gd.querySelector('.cartesianlayer .bg, .nsewdrag');
                const xtitle = gd.querySelector('.g-xtitle');
                const box = el => el ? el.getBoundingClientRect() : null;
                return {legend: box(legend), plot: box(plot), xtitle: box(xtitle),
                        title: gd.layout.title && gd.layout.title.text,
                        width: gd.getBoundingClientRect().width};
            })"""
        )
        assert boxes, path
        for box in boxes:
            assert box["width"] <= 400 and not box["title"], (path, box)
            if box["legend"] and box["plot"]:
                assert box["legend"]["top"] >= box["plot"]["bottom"] - 1, (path, box)
            if box["legend"] and box["xtitle"]:
                assert box["legend"]["top"] >= box["xtitle"]["bottom"] - 1, (path, box)
