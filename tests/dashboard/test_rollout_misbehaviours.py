"""The rollout page's "Why" table: each wrong step, its misbehaviour and what it did."""

from __future__ import annotations

from types import SimpleNamespace

from django.template.loader import render_to_string

from dashboard.pages import why_rows


def rows(count: int) -> list[dict]:
    misbehaviour = SimpleNamespace(pk=7, display_name="Calls <b>refund</b> twice")
    return [
        {
            "index": i,
            "source": "conformal",
            "weight": 0.25,
            "signals": ["repeats the same action"],
            "misbehaviour": misbehaviour if i % 2 else None,
        }
        for i in range(count)
    ]


def render(count: int) -> str:
    project = SimpleNamespace(slug="acme")
    return render_to_string(
        "dashboard/_rollout_misbehaviours.html", {**why_rows(rows(count)), "project": project}
    )


def test_it_lists_every_wrong_step_with_its_misbehaviour_or_none():
    html = render(3)
    assert html.count("<tr>") == 4  # the header and three steps
    assert 'href="/p/acme/misbehaviours/7/"' in html
    assert "unclustered (fits no misbehaviour)" in html
    assert "in the prediction set (weight 0.25 of the rollout's one decisive error" in html


def test_it_gives_a_signalled_steps_share_of_the_decisive_error():
    project = SimpleNamespace(slug="acme")
    row = {"index": 4, "source": "signal", "weight": 0.4, "signals": [], "misbehaviour": None}
    html = render_to_string(
        "dashboard/_rollout_misbehaviours.html", {**why_rows([row]), "project": project}
    )
    assert (
        "no label or prediction set yet (weight 0.40 of the rollout's one decisive error)" in html
    )


def test_it_escapes_a_misbehaviour_name():
    html = render(2)
    assert "Calls &lt;b&gt;refund&lt;/b&gt; twice" in html and "<b>refund" not in html


def test_it_folds_the_steps_after_the_first_twelve():
    html = render(20)
    shown, folded = html.split('id="rollout-misbehaviours-more"')
    assert shown.count("<tr>") == 13 and folded.count("<tr>") == 8
    assert "8 more wrong steps" in folded
