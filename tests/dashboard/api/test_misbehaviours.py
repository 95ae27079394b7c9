"""Misbehaviours as the clustering stored them: the list, one, and its member steps by page."""

from __future__ import annotations

import pytest

from analysis.models import Misbehaviour, WrongStepMembership
from analysis.selectors import active_misbehaviours
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/acme/misbehaviours"


def test_it_lists_the_active_misbehaviours_largest_first(client, tau_project, token):
    body = client.get(URL, **auth(token)).json()
    expected = [m.pk for m in active_misbehaviours(tau_project)]
    assert expected and [m["id"] for m in body["misbehaviours"]] == expected


def test_it_shows_one_misbehaviour(client, tau_project, token):
    misbehaviour = active_misbehaviours(tau_project).first()
    body = client.get(f"{URL}/{misbehaviour.pk}", **auth(token)).json()
    assert body["name"] == misbehaviour.display_name and body["size"] == misbehaviour.size
    assert body["exemplar_step_ids"] == [int(pk) for pk in misbehaviour.exemplars]
    assert body["recurs"] == misbehaviour.recurs
    assert body["loose"] is misbehaviour.loose and body["pattern"] == misbehaviour.pattern
    assert set(body["recurs"]) == {"environments", "tasks", "policy_models"}


def test_it_gives_the_crude_and_length_adjusted_lifts_the_pages_show(client, tau_project, token):
    body = client.get(URL, **auth(token)).json()
    stored = {m.pk: m for m in active_misbehaviours(tau_project)}
    assert any(m["lift_adjusted"] is not None for m in body["misbehaviours"])
    for shown in body["misbehaviours"]:
        assert shown["lift_unadjusted"] == stored[shown["id"]].lift_unadjusted
        assert shown["lift_adjusted"] == stored[shown["id"]].lift_adjusted


def test_it_gives_the_suggested_category_until_a_user_sets_one(client, tau_project, token):
    # The pages offer a suggestion with its strength; the API said nothing of it, and
    # named a confirmed category without the code the pages and exports show.
    suggested = active_misbehaviours(tau_project).filter(suggested_category__isnull=False)
    misbehaviour = suggested.first()
    assert misbehaviour is not None
    body = client.get(f"{URL}/{misbehaviour.pk}", **auth(token)).json()
    assert body["category"] == "" and body["category_code"] == ""
    suggestion = body["suggested_category"]
    assert suggestion["code"] == misbehaviour.suggested_category.code
    assert suggestion["code"].startswith("MAST-")
    assert suggestion["name"] == misbehaviour.suggested_category.name
    assert suggestion["support"] == misbehaviour.suggestion_support
    assert suggestion["strong"] == misbehaviour.suggestion_is_strong
    assert suggestion["basis"] == misbehaviour.suggestion_basis
    misbehaviour.category = misbehaviour.suggested_category
    misbehaviour.save(update_fields=["category"])
    listed = client.get(URL, **auth(token)).json()["misbehaviours"]
    [shown] = [m for m in listed if m["id"] == misbehaviour.pk]
    assert shown["category"] == misbehaviour.category.name
    assert shown["category_code"] == misbehaviour.category.code
    assert shown["suggested_category"] is None


def test_it_pages_the_member_steps_by_cursor(client, tau_project, token):
    misbehaviour = active_misbehaviours(tau_project).first()
    expected = list(
        WrongStepMembership.objects.filter(misbehaviour=misbehaviour)
        .order_by("id")
        .values_list("step_id", flat=True)
    )
    seen, url, params = [], f"{URL}/{misbehaviour.pk}/members", {"limit": 3}
    while url:
        page = client.get(url, params, **auth(token)).json()
        seen += [row["step_id"] for row in page["results"]]
        url, params = page["next"], {}
    assert len(expected) > 3 and seen == expected


def test_it_answers_404_for_another_projects_misbehaviour(
    client, tau_project, token, other_project
):
    foreign = Misbehaviour.objects.create(project=other_project, key="m-x", name="theirs")
    response = client.get(f"{URL}/{foreign.pk}", **auth(token))
    assert response.status_code == 404 and "misbehaviour" in response.json()["error"]
