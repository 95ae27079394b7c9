from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.models import TaxonomyCategory

pytestmark = pytest.mark.django_db

PAGES = ["analysis:misbehaviour_list", "analysis:misbehaviour_map", "analysis:taxonomy"]


@pytest.mark.parametrize("name", PAGES)
def test_it_renders_for_a_project_with_no_misbehaviours(client, member, project, name):
    client.force_login(member)
    response = client.get(reverse(name, args=[project.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    if name != "analysis:taxonomy":
        assert 'id="no-misbehaviours"' in html
        assert f"manage.py misbehaviours_refresh {project.slug}" in html


@pytest.mark.parametrize("name", PAGES + ["analysis:run_status"])
def test_it_hides_the_project_from_outsiders(client, outsider, project, name):
    client.force_login(outsider)
    assert client.get(reverse(name, args=[project.slug])).status_code == 404


def test_it_hides_a_misbehaviour_from_outsiders(client, outsider, project):
    client.force_login(outsider)
    url = reverse("analysis:misbehaviour_detail", args=[project.slug, 1])
    assert client.get(url).status_code == 404


def test_it_sends_anonymous_visitors_to_log_in(client, project):
    response = client.get(reverse("analysis:misbehaviour_list", args=[project.slug]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_lists_the_fourteen_mast_modes(client, member, project):
    client.force_login(member)
    html = client.get(reverse("analysis:taxonomy", args=[project.slug])).content.decode()
    assert TaxonomyCategory.objects.filter(project=None, taxonomy="mast").count() == 14
    assert "Step repetition" in html and "Incorrect verification" in html


def test_it_lets_a_member_create_a_category(client, member, project):
    client.force_login(member)
    url = reverse("analysis:category_create", args=[project.slug])
    client.post(url, {"name": "Books before confirming", "definition": "x", "group": ""})
    category = TaxonomyCategory.objects.get(project=project)
    assert category.name == "Books before confirming"
    html = client.get(reverse("analysis:taxonomy", args=[project.slug])).content.decode()
    assert "Books before confirming" in html


@pytest.mark.parametrize("name", ["disobedient to task  specification", "MAST-1"])
def test_it_refuses_a_copy_of_a_builtin_category(client, member, project, name):
    """A copy read like MAST's own on every page, in the API and in exports."""
    builtin = TaxonomyCategory.objects.get(project__isnull=True, code="MAST-1")
    client.force_login(member)
    url = reverse("analysis:category_create", args=[project.slug])
    response = client.post(url, {"name": name, "definition": "", "group": "MAST"}, follow=True)
    assert not TaxonomyCategory.objects.filter(project=project).exists()
    assert f"MAST-1 {builtin.name} is one of MAST" in response.content.decode()


def test_it_refuses_edits_from_a_viewer(client, viewer, project):
    client.force_login(viewer)
    url = reverse("analysis:category_create", args=[project.slug])
    assert client.post(url, {"name": "Nope"}).status_code == 403
    assert not TaxonomyCategory.objects.filter(project=project).exists()


def test_it_queues_one_refresh_at_a_time(client, member, project):
    from analysis.models import ClusteringRun

    client.force_login(member)
    url = reverse("analysis:refresh", args=[project.slug])
    client.post(url)
    client.post(url)
    assert ClusteringRun.objects.filter(project=project).count() == 1
    status = client.get(reverse("analysis:run_status", args=[project.slug])).json()
    assert status["status"] == "queued"


def test_it_refreshes_an_empty_project_through_the_task(client, member, project):
    from analysis.models import ClusteringRun, RunStatus
    from analysis.tasks import misbehaviours_refresh_task

    run = ClusteringRun.objects.create(project=project)
    misbehaviours_refresh_task.apply(args=(project.pk, run.pk))
    run.refresh_from_db()
    assert (run.status, run.wrong_step_count, run.progress_percent) == (RunStatus.DONE, 0, 100)
    client.force_login(member)
    html = client.get(reverse("analysis:misbehaviour_list", args=[project.slug])).content.decode()
    assert 'id="no-misbehaviours"' in html and "Full re-clustering" in html


def test_it_refuses_a_refresh_from_a_viewer(client, viewer, project):
    from analysis.models import ClusteringRun

    client.force_login(viewer)
    assert client.post(reverse("analysis:refresh", args=[project.slug])).status_code == 403
    assert not ClusteringRun.objects.filter(project=project).exists()


def test_it_sums_the_unclustered_wrong_steps_in_one_query(project, django_assert_num_queries):
    from analysis.selectors import unclustered_summary

    with django_assert_num_queries(1):
        summary = unclustered_summary(project)
    assert summary == {"wrong_steps": 0, "count": 0, "share": 0.0}


def test_it_says_why_wrong_steps_formed_no_misbehaviour(client, member, project):
    from analysis.models import ClusteringRun, RunKind, RunStatus

    ClusteringRun.objects.create(
        project=project,
        kind=RunKind.FULL,
        status=RunStatus.DONE,
        wrong_step_count=4,
        params={"min_cluster_size": 5},
    )
    client.force_login(member)
    html = client.get(reverse("analysis:misbehaviour_list", args=[project.slug])).content.decode()
    assert 'id="too-few-alike"' in html
    assert "took 4 wrong steps and found no group of at least 5 alike" in html
    assert reverse("attribution:labelling_queue", args=[project.slug]) in html


def test_it_says_a_first_clustering_is_under_way_instead_of_asking_for_uploads(
    client, member, project
):
    from analysis.models import ClusteringRun, RunKind, RunStatus

    ClusteringRun.objects.create(project=project, kind=RunKind.FULL, status=RunStatus.RUNNING)
    client.force_login(member)
    html = client.get(reverse("analysis:misbehaviour_list", args=[project.slug])).content.decode()
    assert 'id="clustering-under-way"' in html
    assert (
        reverse("dashboard:uploads", args=[project.slug])
        not in html.split('id="no-misbehaviours"')[1]
    )


def test_it_says_a_loose_group_shares_nothing_but_wording(client, member, project):
    from analysis.models import Misbehaviour
    from analysis.views import LOOSE_TEXT

    loose = Misbehaviour.objects.create(
        project=project,
        key="k1",
        name="An expert sometimes says “web search”",
        loose=True,
        is_active=True,
        share=0.09,
        size=34,
    )
    Misbehaviour.objects.create(
        project=project, key="k2", name="Calls book_reservation", is_active=True, share=0.1, size=9
    )
    client.force_login(member)
    listed = client.get(reverse("analysis:misbehaviour_list", args=[project.slug])).content.decode()
    assert listed.count("data-loose") == 1
    detail = client.get(reverse("analysis:misbehaviour_detail", args=[project.slug, loose.pk]))
    assert 'id="loose-note"' in detail.content.decode()
    assert LOOSE_TEXT in detail.content.decode()


def test_a_missing_lift_says_why(client, member, project):
    """A trial's misbehaviour showed "— —" with "no successful rollouts to compare with"
    in a project with 28 successes: nothing of the lift's sample contained it."""
    from analysis.models import Misbehaviour
    from tests.attribution.conftest import make_rollout

    misbehaviour = Misbehaviour.objects.create(project=project, key="k", name="Edits a file")
    url = reverse("analysis:misbehaviour_detail", args=[project.slug, misbehaviour.pk])
    client.force_login(member)
    assert "no successful rollouts to compare with" in client.get(url).content.decode()
    make_rollout(project, outcome="success", label=False)
    html = client.get(url).content.decode()
    assert "none of the rollouts the lift samples contains it" in html
