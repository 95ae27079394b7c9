"""Pages a phone shows whole: the rollout page's "Why" table and the comparison's pickers.

At 390px the "Why" table's four columns of prose broke words anywhere ("make / s a / chan
/ ge", "failur / e") and its last column was out of sight; a rollout id of 33 characters
in the comparison's select made that page 431px wide.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string

from dashboard.pages import why_rows
from tests.browser.conftest import log_in
from tests.browser.test_hostile_content import OVERFLOWING
from tests.conftest import ingest_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
CSS = Path(__file__).resolve().parents[2] / "static" / "css" / "faultline.css"

# Words a line break split: a word whose box has more than one line rectangle.
SPLIT_WORDS = """(selector) => {
  const split = [];
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let m;
      while ((m = re.exec(node.textContent))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  return split;
}"""


def _why_html() -> str:
    misbehaviour = SimpleNamespace(
        pk=3, display_name="Calls update_reservation_flights, a change the task never called for"
    )
    rows = [
        {
            "index": 14,
            "source": "signal",
            "weight": 0.88,
            "signals": ["makes a change the task never called for", "uses a value nobody provided"],
            "misbehaviour": misbehaviour,
        },
        {"index": 20, "source": "error", "weight": 1.0, "signals": [], "misbehaviour": None},
    ]
    return render_to_string(
        "dashboard/_rollout_misbehaviours.html",
        {**why_rows(rows), "project": SimpleNamespace(slug="acme")},
    )


def test_the_why_table_breaks_no_word_and_shows_every_column_on_a_phone(chromium):
    context = chromium.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_content(
        f"<html><head><style>{CSS.read_text()}</style></head>"
        f'<body><main class="page">{_why_html()}</main></body></html>'
    )
    assert page.evaluate(SPLIT_WORDS, "#rollout-misbehaviours td") == []
    assert page.evaluate(OVERFLOWING, PHONE["width"]) == []
    last = page.locator("#rollout-misbehaviours tbody tr").first.locator("td").last
    box = last.bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    heading = last.evaluate("e => getComputedStyle(e, '::before').content")
    assert heading == '"taken as wrong because"'  # each cell shows its column's heading
    # On a wide screen it stays a table with its header row.
    page.set_viewport_size({"width": 1360, "height": 900})
    assert page.locator("#rollout-misbehaviours thead").is_visible()
    context.close()


def test_the_comparison_fits_a_phone_with_a_long_rollout_id(page, browser_user, project):
    lines = [
        {
            "id": rollout_id,
            "task_id": "t-1",
            "outcome": outcome,
            "steps": [
                {"role": "user", "content": "change my flight"},
                {"role": "assistant", "content": f"done ({outcome})"},
            ],
        }
        for rollout_id, outcome in (
            ("short-a", "failure"),
            ("4bf92f3577b34da6a3ce929d0e0e4736-trial", "success"),
            ("short-b", "failure"),
        )
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    ingest_bytes(project, body, "pair.jsonl")
    rollout = project.trajectories.get(external_id="short-a")
    log_in(page, browser_user)
    page.set_viewport_size(PHONE)
    page.goto(f"{page.base}/p/{project.slug}/rollouts/{rollout.pk}/compare/")
    page.wait_for_load_state("load")
    assert page.locator("select#with option").count() == 2  # the select shows from two
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], page.evaluate(OVERFLOWING, PHONE["width"])
    assert page.errors == []
