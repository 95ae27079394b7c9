from __future__ import annotations

import glob

import pytest
from django.urls import reverse

from analysis.clustering import project_misbehaviours_refresh
from analysis.curation import (
    MSG_NAME_TAKEN,
    misbehaviour_categorise,
    misbehaviour_merge,
    misbehaviour_rename,
)
from analysis.models import (
    ClusteringRun,
    Misbehaviour,
    RunKind,
    RunStatus,
    TaxonomyCategory,
    WrongStepMembership,
)
from analysis.selectors import misbehaviour_summary
from ingest.models import Step
from tests.conftest import WHO_AND_WHEN, ingest_file, shared_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def clustered(demo_project):
    project_misbehaviours_refresh(project_id=demo_project.pk)
    return demo_project


def active(project):
    return list(
        Misbehaviour.objects.filter(project=project, is_active=True).order_by("-share", "id")
    )


def test_it_clusters_real_rollouts_end_to_end(clustered):
    run = ClusteringRun.objects.get(project=clustered)
    assert (run.status, run.kind, run.stage, run.progress) == (
        RunStatus.DONE,
        RunKind.FULL,
        "done",
        1.0,
    )
    memberships = WrongStepMembership.objects.filter(project=clustered)
    assert run.wrong_step_count == memberships.count() > 30
    found = active(clustered)
    assert len(found) >= 3
    # Shares are of the wrong steps' weight (a signalled action of an unranked rollout
    # weighs its part of one), so the unclustered part is counted by weight too.
    total = sum(memberships.values_list("weight", flat=True))
    unclustered = sum(memberships.filter(misbehaviour=None).values_list("weight", flat=True))
    assert abs(sum(m.share for m in found) - (1 - unclustered / total)) < 1e-6
    assert any(m.pattern.startswith("calls ") for m in found)  # tau-bench tool calls
    assert all(m.exemplars and m.name for m in found)
    summary = misbehaviour_summary(clustered)
    assert [row["id"] for row in summary] == [m.pk for m in found]
    assert summary[0]["url"] == reverse(
        "analysis:misbehaviour_detail", args=[clustered.slug, found[0].pk]
    )
    # Recurrence is counted from the stored weights: tasks where its steps add up to half
    # a wrong step (analysis.core.lift.recurs_in).
    for m in found:
        weights: dict[str, float] = {}
        for task, weight in memberships.filter(misbehaviour=m).values_list(
            "step__trajectory__task_id", "weight"
        ):
            weights[task] = weights.get(task, 0.0) + weight
        assert m.recurs["tasks"] == sum(1 for w in weights.values() if w >= 0.5 - 1e-9)
        assert m.recurs["tasks"] <= m.task_count == len(weights)
    # A task delivered twice does nothing the second time.
    project_misbehaviours_refresh(project_id=clustered.pk, run_id=run.pk)
    assert ClusteringRun.objects.filter(project=clustered).count() == 1


def test_it_keeps_names_merges_and_categories_across_a_recluster(clustered):
    first, second, third = active(clustered)[:3]
    misbehaviour_rename(misbehaviour=first, name="Books without checking the fare")
    category = TaxonomyCategory.objects.get(project=None, code="MAST-7")
    misbehaviour_categorise(misbehaviour=first, category_id=category.pk)
    merged = misbehaviour_merge(source=third, target=second)
    merged_size = merged.size
    assert merged.pk == second.pk and merged_size > 0

    project_misbehaviours_refresh(project_id=clustered.pk, force_full=True)

    first.refresh_from_db()
    third.refresh_from_db()
    second.refresh_from_db()
    assert first.is_active and first.display_name == "Books without checking the fare"
    assert first.category_id == category.pk
    assert third.merged_into_id == second.pk and not third.is_active
    assert second.size == merged_size
    assert not WrongStepMembership.objects.filter(misbehaviour=third).exists()
    assert ClusteringRun.objects.filter(project=clustered, kind=RunKind.FULL).count() == 2


def test_the_treemap_groups_by_a_strong_suggestion_until_the_user_categorises(clustered):
    first, second, third = active(clustered)[:3]
    mast1 = TaxonomyCategory.objects.get(project=None, code="MAST-1")
    mast7 = TaxonomyCategory.objects.get(project=None, code="MAST-7")
    Misbehaviour.objects.filter(pk=first.pk).update(
        suggested_category=mast1, suggestion_support=0.8, category=None
    )
    Misbehaviour.objects.filter(pk=second.pk).update(
        suggested_category=mast1, suggestion_support=0.2, category=None
    )
    Misbehaviour.objects.filter(pk=third.pk).update(
        suggested_category=mast1, suggestion_support=1.0, category=mast7
    )
    rows = {row["id"]: row for row in misbehaviour_summary(clustered)}
    assert rows[first.pk]["category"] == f"{mast1.name} (suggested)"
    assert rows[first.pk]["category_group"] == mast1.group
    # A weak suggestion groups nothing; the user's category wins over any suggestion.
    assert rows[second.pk]["category"] == "" and rows[second.pk]["category_group"] == ""
    assert rows[third.pk]["category"] == mast7.name


def test_it_assigns_new_wrong_steps_without_reclustering(clustered):
    path = sorted(glob.glob(str(WHO_AND_WHEN / "Hand-Crafted" / "*.json")))[0]
    ingest_file(clustered, shared_file(path))
    project_misbehaviours_refresh(project_id=clustered.pk)
    run = ClusteringRun.objects.filter(project=clustered).order_by("-id").first()
    assert run.kind == RunKind.INCREMENTAL and run.status == RunStatus.DONE
    assert run.assigned_count == 1
    # One text looked up: the new step's. (Counted as hits plus misses, since whether the
    # cache already holds a vector for that text depends on what ran before in this
    # database, not on this run.)
    assert run.metrics["cache_misses"] + run.metrics["cache_hits"] == 1
    assert WrongStepMembership.objects.filter(project=clustered, assigned=True).count() == 1


def test_a_full_reclustering_of_unchanged_steps_embeds_nothing_again(clustered):
    first = ClusteringRun.objects.get(project=clustered)
    assert first.backend == "wordllama"
    looked_up = first.metrics["cache_misses"] + first.metrics["cache_hits"]
    assert looked_up > 0
    project_misbehaviours_refresh(project_id=clustered.pk, force_full=True)
    second = ClusteringRun.objects.filter(project=clustered).order_by("-id").first()
    assert second.kind == RunKind.FULL and second.status == RunStatus.DONE
    # Every text the first run looked up is found the second time: nothing is embedded.
    assert second.metrics["cache_misses"] == 0
    assert second.metrics["cache_hits"] == looked_up


def test_the_tfidf_fallback_is_selected_by_the_setting(settings, demo_project):
    settings.FAULTLINE_EMBEDDINGS = "tfidf"
    project_misbehaviours_refresh(project_id=demo_project.pk)
    run = ClusteringRun.objects.get(project=demo_project)
    assert run.backend == "tfidf" and run.status == RunStatus.DONE
    assert Misbehaviour.objects.filter(project=demo_project, is_active=True).exists()


def test_it_shows_the_list_the_map_and_exemplars_linking_to_their_step(client, member, clustered):
    misbehaviour = active(clustered)[0]
    step = Step.objects.get(pk=misbehaviour.exemplars[0])
    step.content = "<script>alert(1)</script> booked anyway"
    step.save()
    client.force_login(member)
    html = client.get(misbehaviour.get_absolute_url()).content.decode()
    rollout_url = reverse("dashboard:rollout_detail", args=[clustered.slug, step.trajectory_id])
    assert f'href="{rollout_url}#step-{step.index}"' in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'data-figure-id="spread-environments-data"' in html
    recurs = misbehaviour.recurs
    card = html.split('id="recurs"')[1].split("</div></div>")[0]
    assert f"{recurs['environments']} / {recurs['tasks']} / {recurs['policy_models']}<" in card
    assert f"of {misbehaviour.environment_count} / {misbehaviour.task_count} /" in card
    html = client.get(reverse("analysis:misbehaviour_list", args=[clustered.slug])).content.decode()
    for m in active(clustered):
        assert m.get_absolute_url() in html
    assert 'id="unclustered-row"' in html
    assert '<span class="muted small">of ' in html
    # Rows stored before recurrence was counted show the plain counts until the next run.
    Misbehaviour.objects.filter(project=clustered).update(recurs={})
    html = client.get(reverse("analysis:misbehaviour_list", args=[clustered.slug])).content.decode()
    assert '<span class="muted small">of ' not in html
    # Rollouts that name no environment or task (live traces often do not): a dash, not
    # "0 of 0".
    Misbehaviour.objects.filter(project=clustered).update(environment_count=0, task_count=0)
    html = client.get(reverse("analysis:misbehaviour_list", args=[clustered.slug])).content.decode()
    assert '<span class="muted" title="its rollouts name none">—</span>' in html
    # Every misbehaviour whose steps point to a MAST mode gets it, with its support.
    suggested = [m for m in active(clustered) if m.suggested_category_id is not None]
    assert suggested and all(
        0 < m.suggestion_support <= 1 and m.suggestion_basis for m in suggested
    )
    html = client.get(reverse("analysis:taxonomy", args=[clustered.slug])).content.decode()
    row = html.split(f'id="suggestion-{suggested[0].pk}"')[1].split("</tr>")[0]
    assert f"{round(suggested[0].suggestion_support * 100)}% of its steps points to it" in row
    html = client.get(reverse("analysis:misbehaviour_map", args=[clustered.slug])).content.decode()
    assert '"scattergl"' in html and 'data-click="url"' in html


def test_it_refuses_a_name_another_misbehaviour_already_shows(clustered):
    first, second = active(clustered)[:2]
    with pytest.raises(ValueError) as refused:
        misbehaviour_rename(misbehaviour=first, name=f"  {second.display_name.upper()} ")
    assert str(refused.value) == MSG_NAME_TAKEN.format(name=second.display_name.upper())
    first.refresh_from_db()
    assert first.user_name == ""
    # Back to its generated name is refused too once another row is called that.
    misbehaviour_rename(misbehaviour=first, name="Something else")
    misbehaviour_rename(misbehaviour=second, name=first.name)
    with pytest.raises(ValueError):
        misbehaviour_rename(misbehaviour=first, name="")


def test_it_says_on_the_page_why_a_rename_was_refused(client, member, clustered):
    first, second = active(clustered)[:2]
    client.force_login(member)
    response = client.post(
        reverse("analysis:misbehaviour_rename", args=[clustered.slug, first.pk]),
        {"name": second.display_name},
        follow=True,
    )
    html = response.content.decode()
    assert "is already called" in html and "Renamed." not in html
    first.refresh_from_db()
    assert first.user_name == ""
    # Past the field's 300 characters (only from outside a browser): said, not dropped.
    response = client.post(
        reverse("analysis:misbehaviour_rename", args=[clustered.slug, first.pk]),
        {"name": "x" * 400},
        follow=True,
    )
    html = response.content.decode()
    assert "at most 300 characters (it has 400)" in html and "Renamed." not in html
    first.refresh_from_db()
    assert first.user_name == ""


def test_it_renames_merges_and_maps_through_the_pages(client, member, clustered):
    first, second = active(clustered)[:2]
    client.force_login(member)
    slug = clustered.slug
    client.post(reverse("analysis:misbehaviour_rename", args=[slug, first.pk]), {"name": "Mine"})
    mast = TaxonomyCategory.objects.get(project=None, code="MAST-3")
    client.post(
        reverse("analysis:misbehaviour_categorise", args=[slug, first.pk]), {"category": mast.pk}
    )
    response = client.post(
        reverse("analysis:misbehaviour_merge", args=[slug, second.pk]),
        {"target": first.pk, "confirm": "yes"},
    )
    assert response["Location"] == first.get_absolute_url()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.user_name, first.category_id, second.merged_into_id) == (
        "Mine",
        mast.pk,
        first.pk,
    )
    assert client.get(second.get_absolute_url())["Location"] == first.get_absolute_url()


def test_the_command_clusters_a_project_and_prints_its_misbehaviours(demo_project):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("misbehaviours_refresh", demo_project.slug, "--full", stdout=out)
    lines = out.getvalue().splitlines()
    run = ClusteringRun.objects.get(project=demo_project)
    assert lines[0] == (
        f"Full re-clustering with wordllama embeddings: {run.wrong_step_count} wrong steps, "
        f"{len(active(demo_project))} misbehaviours"
    )
    assert f"top8_share={run.metrics['top8_share']:.3f}" in lines[1]
    assert lines[2] == "  share  failure lift (crude / length-adjusted)  name"
    top = active(demo_project)[0]
    assert lines[3].endswith(top.display_name) and f"{100 * top.share:5.1f}%" in lines[3]
    crude = "-" if top.lift_unadjusted is None else f"{top.lift_unadjusted:.2f}x"
    assert f" {crude} / " in lines[3]


def test_the_command_names_an_unknown_project():
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="No project with slug 'nope'"):
        call_command("misbehaviours_refresh", "nope")


def test_a_full_run_reports_each_stage_with_rising_progress(monkeypatch, demo_project):
    import analysis.clustering as services

    seen: list[tuple[str, float]] = []
    original = services._progress

    def observed(run):
        report = original(run)

        def record(stage: str, fraction: float) -> None:
            report(stage, fraction)
            seen.append(
                ClusteringRun.objects.filter(pk=run.pk).values_list("stage", "progress").get()
            )

        return record

    monkeypatch.setattr(services, "_progress", observed)
    project_misbehaviours_refresh(project_id=demo_project.pk)
    stages = [stage for stage, _ in seen]
    assert stages[:4] == ["embedding", "reducing", "clustering", "describing"]
    progress = [value for _, value in seen]
    assert progress == sorted(progress) and 0 < progress[0] < progress[-1] < 1
    run = ClusteringRun.objects.get(project=demo_project)
    assert (run.stage, run.progress) == ("done", 1.0)


def test_an_exemplar_call_shows_its_arguments_as_json_and_where_each_came_from(
    client, member, clustered
):
    sourced = WrongStepMembership.objects.filter(
        project=clustered, misbehaviour__is_active=True
    ).exclude(arg_sources=[])
    misbehaviour = next(
        m.misbehaviour
        for m in sourced.select_related("misbehaviour")
        if m.step_id in m.misbehaviour.exemplars
    )
    client.force_login(member)
    html = client.get(misbehaviour.get_absolute_url()).content.decode()
    exemplars = html.split('id="exemplars"')[1]
    assert "Where its argument values came from: <code>" in exemplars
    assert "&quot;: " in exemplars and "{&#x27;" not in exemplars  # JSON, not a Python dict
    shown = sourced.filter(step_id__in=misbehaviour.exemplars).first()
    name, source = shown.arg_sources[0]
    assert f"<code>{name}</code> a value " in exemplars


def test_an_exemplar_with_long_arguments_folds_them(client, member, clustered):
    from ingest.models import Step

    misbehaviour = next(
        m for m in Misbehaviour.objects.filter(project=clustered, is_active=True) if m.exemplars
    )
    step_id = misbehaviour.exemplars[0]
    long_args = {"rows": [{"n": n, "text": "x" * 40} for n in range(60)]}
    Step.objects.filter(pk=step_id).update(tool_name="write_rows", tool_args=long_args)
    client.force_login(member)
    html = client.get(misbehaviour.get_absolute_url()).content.decode()
    exemplars = html.split('id="exemplars"')[1]
    assert '<details class="tool-args-fold">' in exemplars
    assert "(arguments, " in exemplars and "characters, show all)" in exemplars
