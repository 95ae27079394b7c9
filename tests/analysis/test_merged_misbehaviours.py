"""A merged misbehaviour everywhere its id can still arrive (a stale tab, an old link, a
saved script): its steps are in the one it joined, so filters and exports follow the merge,
the API says where it went and counts nothing, and a second merge of it is refused."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from analysis.curation import MSG_MERGE_ALREADY, misbehaviour_merge, misbehaviour_merge_plan
from analysis.models import ClusteringRun, Misbehaviour, WrongStepMembership
from analysis.selectors import misbehaviours_now
from exports.core.filters import parse_filters
from exports.selectors import export_rollouts
from ingest.models import Step
from projects.tokens import project_token_issue
from tests.attribution.conftest import make_rollout, make_upload
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db


@pytest.fixture
def merged(project):
    """“Retries” (3 steps, rollouts A and B) merged into “Books twice” (1 step, rollout C);
    “Gives up” (1 step, rollout D) stays apart."""
    upload = make_upload(project)
    a, b, c, d = (make_rollout(project, upload=upload, label=False) for _ in range(4))
    run = ClusteringRun.objects.create(project=project, status="done")
    retries = Misbehaviour.objects.create(
        project=project, key="m1", name="Retries", size=3, rollout_count=2, generalises=True
    )
    books = Misbehaviour.objects.create(project=project, key="m2", name="Books twice", size=1)
    gives_up = Misbehaviour.objects.create(project=project, key="m3", name="Gives up", size=1)
    for rollout, index, misbehaviour in (
        (a, 1, retries),
        (a, 2, retries),
        (b, 1, retries),
        (c, 1, books),
        (d, 1, gives_up),
    ):
        WrongStepMembership.objects.create(
            project=project,
            run=run,
            step=Step.objects.get(trajectory=rollout, index=index),
            misbehaviour=misbehaviour,
            source="error",
        )
    misbehaviour_merge(source=retries, target=books)
    return {"retries": retries, "books": books, "gives_up": gives_up, "rollouts": (a, b, c, d)}


def test_its_id_now_means_the_one_it_joined(project, merged):
    retries, books, gives_up = merged["retries"], merged["books"], merged["gives_up"]
    assert misbehaviours_now(project, [retries.pk, gives_up.pk, books.pk]) == [
        books.pk,
        gives_up.pk,
    ]
    assert misbehaviours_now(project, [999_999]) == []


def test_it_counts_nothing_once_merged(merged):
    retries = Misbehaviour.objects.get(pk=merged["retries"].pk)
    assert (retries.size, retries.rollout_count, retries.generalises) == (0, 0, False)
    assert retries.lift_adjusted is None and not retries.is_active
    assert retries.name == "Retries"  # what it described is kept


def test_a_second_merge_of_it_is_refused(merged):
    retries = Misbehaviour.objects.get(pk=merged["retries"].pk)
    message = MSG_MERGE_ALREADY.format(name="Books twice")
    with pytest.raises(ValueError, match=message):
        misbehaviour_merge_plan(source=retries, target=merged["gives_up"])
    with pytest.raises(ValueError, match=message):
        misbehaviour_merge(source=retries, target=merged["gives_up"])
    assert Misbehaviour.objects.get(pk=retries.pk).merged_into_id == merged["books"].pk


def test_a_stale_tabs_merge_says_so_on_the_page(client, member, project, merged):
    client.force_login(member)
    url = reverse("analysis:misbehaviour_merge", args=[project.slug, merged["retries"].pk])
    response = client.post(url, {"target": merged["gives_up"].pk, "confirm": "yes"}, follow=True)
    assert "was already merged into “Books twice”" in response.content.decode()
    assert Misbehaviour.objects.get(pk=merged["retries"].pk).merged_into_id == merged["books"].pk


def test_the_rollouts_filter_follows_the_merge(client, member, project, merged):
    client.force_login(member)
    a, b, c, _ = merged["rollouts"]
    url = reverse("dashboard:rollout_list", args=[project.slug])
    shown = client.get(url, {"misbehaviour": merged["retries"].pk}).context["page"].object_list
    assert sorted(r.pk for r in shown) == sorted([a.pk, b.pk, c.pk])
    token = project_token_issue(project=project, name="ci")
    body = client.get(
        f"/api/v1/projects/{project.slug}/rollouts",
        {"misbehaviour": merged["retries"].pk},
        **auth(token),
    ).json()
    assert sorted(r["id"] for r in body["results"]) == sorted([a.pk, b.pk, c.pk])


def test_the_api_names_where_a_merged_one_went(client, project, merged):
    token = project_token_issue(project=project, name="ci")
    base = f"/api/v1/projects/{project.slug}/misbehaviours"
    body = client.get(f"{base}/{merged['retries'].pk}", **auth(token)).json()
    assert (body["merged_into"], body["size"], body["rollout_count"]) == (
        merged["books"].pk,
        0,
        0,
    )
    listed = client.get(base, **auth(token)).json()["misbehaviours"]
    assert {m["id"] for m in listed} == {merged["books"].pk, merged["gives_up"].pk}
    assert all(m["merged_into"] is None for m in listed)


def test_an_export_of_a_merged_one_exports_the_one_it_joined(project, merged):
    for rollout in merged["rollouts"]:
        rollout.outcome = "failure"
        rollout.save(update_fields=["outcome"])
    a, b, c, _ = merged["rollouts"]
    filters = parse_filters({"misbehaviours": str(merged["retries"].pk)})
    chosen = export_rollouts(project=project, filters=filters)
    assert sorted(chosen.values_list("pk", flat=True)) == sorted([a.pk, b.pk, c.pk])
    assert json.loads(json.dumps(filters.to_json()))["misbehaviours"] == [merged["retries"].pk]


def test_the_one_merged_into_keeps_the_name_it_was_chosen_by(merged):
    books = Misbehaviour.objects.get(pk=merged["books"].pk)
    assert (books.display_name, books.user_name) == ("Books twice", "Books twice")
    # The name generated from its new members is kept beside it, as after a rename.
    assert books.name and books.name != "Books twice"


def test_a_merged_misbehaviour_takes_no_name_or_category(client, member, project, merged):
    """A stale tab renamed a merged misbehaviour ("Renamed."): a name nobody would see."""
    retries = Misbehaviour.objects.get(pk=merged["retries"].pk)
    client.force_login(member)
    for name, data in (
        ("analysis:misbehaviour_rename", {"name": "Loops"}),
        ("analysis:misbehaviour_categorise", {"category": ""}),
    ):
        url = reverse(name, args=[project.slug, retries.pk])
        html = client.post(url, data, follow=True).content.decode()
        assert "was merged into “Books twice”" in html, name
    retries.refresh_from_db()
    assert retries.user_name == "" and retries.category_id is None
