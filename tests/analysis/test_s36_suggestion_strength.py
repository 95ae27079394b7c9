"""A suggested category says how strong it is in words; only a strong one is confirmed in
one click, a weak one is offered as possible with the category list preselected, so the
user chooses (strong: ``analysis.core.mast.STRONG_SUPPORT`` of its steps point to it)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.core.mast import STRONG_SUPPORT
from analysis.curation import MSG_WEAK_SUGGESTION, misbehaviour_confirm_suggestion
from analysis.models import Misbehaviour, TaxonomyCategory
from analysis.views import BACK_TAXONOMY, MSG_CONFIRMED
from tests.conftest import suggested_misbehaviour

pytestmark = pytest.mark.django_db


@pytest.fixture
def mast1():
    return TaxonomyCategory.objects.get(project=None, code="MAST-1")


@pytest.fixture
def strong(project, mast1):
    return suggested_misbehaviour(
        project,
        mast1,
        support=0.8,
        basis="signal",
        key="strong",
        name="Changes the booking unasked",
        share=0.3,
    )


@pytest.fixture
def weak(project, mast1):
    return suggested_misbehaviour(
        project,
        mast1,
        support=0.2,
        basis="wording",
        key="weak",
        name="Talks about the fare",
        share=0.2,
    )


def _taxonomy(client, project) -> str:
    return client.get(reverse("analysis:taxonomy", args=[project.slug])).content.decode()


def _row(html: str, misbehaviour) -> str:
    start = html.index(f'id="suggestion-{misbehaviour.pk}"')
    return html[start : html.index("</tr>", start)]


def _confirm_url(project, misbehaviour):
    return reverse("analysis:misbehaviour_confirm", args=[project.slug, misbehaviour.pk])


def _categorise_url(project, misbehaviour):
    return reverse("analysis:misbehaviour_categorise", args=[project.slug, misbehaviour.pk])


def test_the_threshold_sits_between_the_two_cases(strong, weak):
    assert weak.suggestion_support < STRONG_SUPPORT <= strong.suggestion_support
    assert strong.suggestion_is_strong and not weak.suggestion_is_strong


def test_it_offers_a_strong_suggestion_in_one_click_and_says_it_is_strong(
    client, member, project, strong
):
    client.force_login(member)
    row = _row(_taxonomy(client, project), strong)
    assert 'data-strength="strong"' in row
    assert "strong: a signal of 80% of its steps points to it" in row
    assert f'action="{_confirm_url(project, strong)}"' in row
    assert "possible:" not in row and "<select" not in row


def test_it_offers_a_weak_suggestion_as_possible_with_the_list_preselected(
    client, member, project, weak, mast1
):
    client.force_login(member)
    row = _row(_taxonomy(client, project), weak)
    assert 'data-strength="weak"' in row
    assert "weak: the wording of 20% of its steps points to it" in row
    assert "possible:" in row
    assert _confirm_url(project, weak) not in row and ">Confirm<" not in row
    assert f'action="{_categorise_url(project, weak)}"' in row
    assert f'<select name="category" id="suggestion-{weak.pk}-category">' in row
    assert f'<option value="{mast1.pk}" selected>' in row
    assert f'name="back" value="{BACK_TAXONOMY}"' in row


def test_a_suggestion_of_unknown_strength_is_offered_as_possible(client, member, project, weak):
    Misbehaviour.objects.filter(pk=weak.pk).update(suggestion_support=None)
    client.force_login(member)
    row = _row(_taxonomy(client, project), weak)
    assert "strength not measured" in row and "possible:" in row
    assert _confirm_url(project, weak) not in row


def test_choosing_the_possible_category_saves_it_and_returns_to_the_taxonomy(
    client, member, project, weak, mast1
):
    client.force_login(member)
    response = client.post(
        _categorise_url(project, weak), {"category": mast1.pk, "back": BACK_TAXONOMY}, follow=True
    )
    assert response.redirect_chain[-1][0] == (
        reverse("analysis:taxonomy", args=[project.slug]) + "#suggestions"
    )
    weak.refresh_from_db()
    assert weak.category_id == mast1.pk
    assert MSG_CONFIRMED.format(name=weak.display_name, category=mast1) in [
        str(message) for message in response.context["messages"]
    ]


def test_a_weak_suggestion_cannot_be_confirmed_in_one_click(client, member, project, weak):
    with pytest.raises(ValueError, match="only a possibility"):
        misbehaviour_confirm_suggestion(misbehaviour=weak)
    client.force_login(member)
    response = client.post(_confirm_url(project, weak), follow=True)
    assert MSG_WEAK_SUGGESTION in [str(message) for message in response.context["messages"]]
    weak.refresh_from_db()
    assert weak.category_id is None


def test_a_strong_suggestion_is_confirmed_in_one_click(client, member, project, strong, mast1):
    client.force_login(member)
    client.post(_confirm_url(project, strong))
    strong.refresh_from_db()
    assert strong.category_id == mast1.pk


def test_the_misbehaviour_page_says_suggested_or_possible(
    client, member, project, strong, weak, mast1
):
    client.force_login(member)
    strong_page = client.get(strong.get_absolute_url()).content.decode()
    weak_page = client.get(weak.get_absolute_url()).content.decode()
    assert "Suggested category:" in strong_page and "confirm it on the taxonomy page" in strong_page
    assert "Possible category:" in weak_page and "choose its category below" in weak_page
    assert "weak: the wording of 20% of its steps points to it" in weak_page
    assert "confirm it on the taxonomy page" not in weak_page
    # Its category list starts at the possible one; nothing is saved by showing it.
    assert f'<option value="{mast1.pk}" selected>' in weak_page
    weak.refresh_from_db()
    assert weak.category_id is None


def test_the_list_shows_a_strong_suggestion_and_hides_a_weak_one(
    client, member, project, strong, weak
):
    client.force_login(member)
    html = client.get(reverse("analysis:misbehaviour_list", args=[project.slug])).content.decode()
    strong_cell = html[html.index(strong.display_name) :].split("</td>")[1]
    weak_cell = html[html.index(weak.display_name) :].split("</td>")[1]
    assert 'suggested: <span class="muted small">MAST-1</span> Disobedient' in strong_cell
    assert "suggested, not confirmed; strong: a signal of 80%" in strong_cell
    assert ">—<" in weak_cell and "no category yet; possible: MAST-1" in weak_cell
