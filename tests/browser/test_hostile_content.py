"""A trace full of hostile content, shown on every page that shows trace content.

The payloads sit in every field a trace controls (ids, task ids and text, environment,
model, agent and tool names, tool arguments, contents, label reasons, the file name) and
each tries to set ``window.__hostile`` or open a dialog. A page passes when nothing ran
(flag unset, no dialog), the DOM holds no element the payloads would have created (no
``<script>``/``<img>``/``<svg onload>`` from the data, no ``on*`` attribute, no
``javascript:`` URL), the browser logged no error and no Content-Security-Policy
violation, the page is not wider than a bound over the viewport, and the project
navigation is still visible and clickable (not covered by something the data opened).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse

from tests.browser.conftest import log_in, wait_for_charts
from tests.browser.test_csp_in_chromium import RECORD_VIOLATIONS
from tests.conftest import ingest_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FLAG = "__hostile"
SCRIPT = f"<script>window.{FLAG}='script'</script>"
IMG = f"<img src=x onerror=\"window.{FLAG}='img';alert(1)\">"
SVG = f"<svg onload=\"window.{FLAG}='svg'\"></svg>"
ATTRIBUTE_BREAK = f"\"'><script>window.{FLAG}='attr'</script><b x=\""
JSON_BREAK = f"</script><script>window.{FLAG}='json'</script>"
JS_LINK = f"javascript:window.{FLAG}='link'"
ANCHOR = f"<a href=\"javascript:window.{FLAG}='a'\" id=hostile-anchor>click</a>"
# plotly.js draws <a href> in chart text as a link (it drops javascript: URLs, not these).
LINK = "<a href='https://phish.example/'>open</a>"
FRAME = f"<iframe srcdoc=\"<script>parent.{FLAG}='frame'</script>\"></iframe>"
STYLE = "<style>body{display:none}</style><div style='position:fixed;inset:0'>cover</div>"
ANSI = "\x1b[31mred\x1b[0m \x1b[2J\x1b]8;;https://example.com\x07link\x1b]8;;\x07 \x1b[1A"
BROKEN_HTML = "</div></div></section></main></table></ol><div><table><tr><td><ol><li>"
HUGE_WORD = "W" * 5000
PAYLOADS = [SCRIPT, IMG, SVG, ATTRIBUTE_BREAK, JSON_BREAK, ANCHOR, LINK, FRAME, STYLE, ANSI]
EVERYTHING = " ".join([*PAYLOADS, BROKEN_HTML, HUGE_WORD])
ONE_MEGABYTE_LINE = ("x<b>" + "y" * 60 + "</i> ") * (1_048_576 // 70)
# Wider than the viewport by more than this is a broken layout (scrollbars, a hidden nav).
WIDTH_SLACK_PX = 40
VIEWPORT_WIDTH = 1360
FAILED_ROLLOUTS = 36

# Elements and attributes a payload would have brought in; the pages' own markup has none
# of them (scripts come from /static/, never inline).
DOM_INJECTIONS = """() => {
  const found = [];
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      const v = a.value.trim().toLowerCase();
      if (a.name.startsWith('on')) found.push(e.tagName + ' ' + a.name);
      if (['href', 'src', 'action', 'formaction', 'xlink:href'].includes(a.name)
          && v.startsWith('javascript:')) found.push(e.tagName + ' ' + a.name + '=' + v);
      if (a.name.endsWith('href') && v.includes('phish.example')) found.push('link ' + v);
    }
  }
  for (const e of document.querySelectorAll('iframe, #hostile-anchor, img[src="x"]'))
    found.push('element ' + e.outerHTML.slice(0, 80));
  for (const e of document.querySelectorAll('script:not([src])'))
    if (e.type !== 'application/json') found.push('inline script ' + e.textContent.slice(0, 80));
  for (const e of document.querySelectorAll('body style')) found.push('style element');
  return found;
}"""


# Three kinds of failure, so that the clustering finds misbehaviours to name and list.
ERRORS = ["KeyError 'price' in fare lookup", "Timeout calling the booking service", "Denied"]

# The innermost elements reaching past the bound, with their ancestors: where it breaks.
OVERFLOWING = """(limit) => {
  const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className.trim()
       ? '.' + e.className.trim().split(' ').join('.') : '');
  const wide = e => e.getBoundingClientRect().right > limit || (e.scrollWidth > e.clientWidth + 40
    && getComputedStyle(e).overflowX === 'visible' && e.clientWidth > 0);
  // Inside a box that hides or scrolls its overflow, a wide element breaks nothing.
  const clipped = e => {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    return false;
  };
  const out = [];
  for (const e of document.querySelectorAll('body *')) {
    if (!wide(e) || Array.from(e.children).some(wide) || clipped(e)) continue;
    const chain = [];
    for (let a = e; a && a !== document.body; a = a.parentElement) chain.unshift(describe(a));
    out.push(chain.join(' > '));
    if (out.length === 3) break;
  }
  return out;
}"""


def _hostile_step_text(i: int) -> str:
    return f"Error: {ERRORS[i % len(ERRORS)]} (attempt {i}) {EVERYTHING}"


def _hostile_rollout(i: int, *, outcome: str) -> dict[str, Any]:
    tool = f"{IMG[:60]}{i % 3}"
    steps: list[dict[str, Any]] = [
        {"role": "system", "kind": "system", "content": STYLE + ANSI},
        {"role": "user", "content": SCRIPT + " please " + BROKEN_HTML},
        {"role": "assistant", "agent": SVG, "content": ANCHOR + " " + HUGE_WORD},
        {
            "role": "assistant",
            "agent": SVG,
            "kind": "tool_call",
            "tool_name": tool,
            "tool_args": {JSON_BREAK: [SCRIPT, JS_LINK, {"x": IMG}], "id": ATTRIBUTE_BREAK},
            "tool_call_id": f"{JS_LINK}-{i}",
            "is_mutating": True,
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "tool_name": tool,
            "tool_call_id": f"{JS_LINK}-{i}",
            "content": _hostile_step_text(i),
            "is_error": outcome == "failure",
        },
        {"role": "assistant", "agent": FRAME[:100], "content": JSON_BREAK + ANSI},
        {"role": "assistant", "agent": LINK, "content": "Giving up. " + LINK},
    ]
    line: dict[str, Any] = {
        "format": "faultline.trajectory.v1",
        "id": f"{JS_LINK}{SCRIPT}{i}",
        "task_id": f"{ATTRIBUTE_BREAK}{i % 4}",
        "task_text": EVERYTHING,
        "environment": SVG[:100],
        "agent_system": SCRIPT,
        "policy_model": IMG[:100],
        "outcome": outcome,
        "metadata": {SCRIPT: IMG},
        "steps": steps,
    }
    if outcome == "failure":
        line["labels"] = [
            {"step": 3, "agent": SVG, "reason": f"{SCRIPT} {ANCHOR} {HUGE_WORD}", "source": "human"}
        ]
    return line


def _hostile_trace() -> bytes:
    rollouts = [_hostile_rollout(i, outcome="failure") for i in range(FAILED_ROLLOUTS)]
    rollouts += [_hostile_rollout(i, outcome="success") for i in range(4)]
    long_one = _hostile_rollout(99, outcome="failure")
    long_one["id"] = "one-megabyte-line"
    long_one["steps"][2]["content"] = ONE_MEGABYTE_LINE
    rollouts.append(long_one)
    return "".join(json.dumps(r) + "\n" for r in rollouts).encode("utf-8")


def _ingest_and_refresh(project) -> None:
    from exports.core.filters import parse_filters
    from exports.services import export_create, export_run
    from pipeline.tasks import refresh_project

    ingest_bytes(project, _hostile_trace(), f"{IMG}{JS_LINK}.jsonl")
    refresh_project(project.pk)
    job = export_create(project=project, kinds=("sft",), filters=parse_filters({}), dispatch=False)
    export_run(job_id=job.pk)


def _pages(project) -> list[str]:
    slug = project.slug
    failed = project.trajectories.filter(outcome="failure").exclude(external_id="one-megabyte-line")
    first = failed.order_by("pk").first()
    long_one = project.trajectories.get(external_id="one-megabyte-line")
    paths = [
        reverse("dashboard:project_detail", args=[slug]),
        reverse("dashboard:rollout_list", args=[slug]),
        reverse("dashboard:rollout_list", args=[slug]) + "?q=%3Cscript%3E&environment=%3Csvg",
        reverse("dashboard:rollout_detail", args=[slug, first.pk]),
        reverse("dashboard:rollout_detail", args=[slug, long_one.pk]),
        reverse("dashboard:rollout_compare", args=[slug, first.pk]),
        reverse("dashboard:uploads", args=[slug]),
        reverse("analysis:misbehaviour_list", args=[slug]),
        reverse("analysis:misbehaviour_map", args=[slug]),
        reverse("analysis:taxonomy", args=[slug]),
        reverse("attribution:calibration", args=[slug]),
        reverse("exports:index", args=[slug]),
    ]
    paths += [
        reverse("analysis:misbehaviour_detail", args=[slug, m.pk])
        for m in project.misbehaviours.order_by("pk")[:2]
    ]
    return paths


def _execution_problems(page, dialogs: list[str]) -> list[str]:
    """What ran or came alive on the page (empty when the content stayed text)."""
    problems = [f"dialog opened: {text}" for text in dialogs]
    flag = page.evaluate(f"() => window.{FLAG}")
    if flag is not None:
        problems.append(f"payload ran: window.{FLAG} = {flag}")
    problems += page.evaluate(DOM_INJECTIONS)
    problems += page.evaluate("() => window.__cspViolations || []")
    problems += list(page.errors)  # JavaScript exceptions and console errors
    page.errors.clear()
    dialogs.clear()
    return problems


def _layout_problems(page) -> list[str]:
    """Where the content pushed the page out of shape or covered the navigation."""
    problems = []
    width = page.evaluate("() => document.documentElement.scrollWidth")
    if width > VIEWPORT_WIDTH + WIDTH_SLACK_PX:
        culprits = page.evaluate(OVERFLOWING, VIEWPORT_WIDTH + WIDTH_SLACK_PX)
        problems.append(f"the page is {width}px wide in a {VIEWPORT_WIDTH}px viewport: {culprits}")
    nav = page.locator(".project-nav a")
    if nav.count() < 2 or not nav.first.is_visible():
        problems.append("the project navigation is not visible")
        return problems
    for i in range(nav.count()):
        try:
            nav.nth(i).click(trial=True, timeout=2_000)  # actionable: visible, not covered
        except Exception as exc:  # noqa: BLE001 - Playwright's timeout names the cover
            problems.append(f"navigation link {i} is not clickable: {exc}")
    return problems


def _every_page(page, user, project, check: Callable[[Any], list[str]]) -> dict[str, list[str]]:
    """Open every page showing the hostile trace; what ``check`` finds wrong, by path."""
    log_in(page, user)
    found: dict[str, list[str]] = {}
    for path in _pages(project):
        response = page.goto(page.base + path)
        page.wait_for_load_state("load")
        # The map is a WebGL scatter: headless Chromium without a GPU may not draw it.
        if page.locator(".chart[data-figure-id]").count() and "/map/" not in path:
            wait_for_charts(page)
        problems = [] if response.status == 200 else [f"status {response.status}"]
        problems += check(page)
        if problems:
            found[path] = problems
    return found


@pytest.fixture
def hostile_project(project):
    _ingest_and_refresh(project)
    assert project.misbehaviours.exists(), "the refresh found no misbehaviour to show"
    return project


def test_it_runs_nothing_of_the_hostile_content_on_any_page(page, browser_user, hostile_project):
    page.context.add_init_script(RECORD_VIOLATIONS)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    found = _every_page(
        page, browser_user, hostile_project, lambda p: _execution_problems(p, dialogs)
    )
    assert found == {}, json.dumps(found, indent=1)


def test_it_keeps_every_page_in_layout_with_the_hostile_content(
    page, browser_user, hostile_project
):
    found = _every_page(page, browser_user, hostile_project, _layout_problems)
    assert found == {}, json.dumps(found, indent=1)


def test_it_shows_the_payloads_as_text(page, browser_user, project):
    ingest_bytes(project, _hostile_trace(), "hostile.jsonl")
    rollout = project.trajectories.filter(outcome="failure").order_by("pk").first()
    log_in(page, browser_user)
    page.goto(page.base + reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    text = page.locator("main").inner_text()
    assert SCRIPT in text and "onerror=" in text
    assert page.evaluate(f"() => window.{FLAG}") is None


def test_it_would_notice_a_payload_that_reached_the_dom(page):
    # The checks above pass on escaped content; here the same payloads as live markup.
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.goto(page.base + "/login/")
    page.evaluate(
        "all => all.forEach(html => document.body.insertAdjacentHTML('beforeend', html))",
        PAYLOADS,
    )
    problems = page.evaluate(DOM_INJECTIONS)
    assert any("onerror" in p for p in problems) and any("inline script" in p for p in problems)
    assert any("javascript:" in p for p in problems)
    assert any("phish.example" in p for p in problems)


def test_a_right_to_left_override_in_a_name_stays_inside_it(page, browser_user, project):
    # "evil\u202e" would show the words after it right to left, were it not isolated.
    line = {
        "id": "rlo-1",
        "outcome": "failure",
        "agent": "sys\u202etem",
        "steps": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "agent": "bot\u202eevil", "content": "Booked, reference XK42."},
        ],
    }
    ingest_bytes(project, (json.dumps(line) + "\n").encode(), "rlo.jsonl")
    rollout = project.trajectories.get(external_id="rlo-1")
    log_in(page, browser_user)
    page.goto(page.base + reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    agent = page.locator(".step-who .agent", has_text="bot").first
    # Isolated: the override ends with the name (the override itself is still shown).
    assert agent.evaluate("el => getComputedStyle(el).unicodeBidi") == "isolate"
    assert "\u202e" in agent.inner_text()
