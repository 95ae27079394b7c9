"""The rollout panel: selector contents, the sentence, and the partial's escaping."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from attribution.models import TrajectoryAttribution
from attribution.selectors import attribution_panel, attribution_sentence
from attribution.services import project_attribution_refresh
from ingest.models import Trajectory
from tests.attribution.conftest import make_rollout, make_upload, with_system

pytestmark = pytest.mark.django_db


def _calibrated_rollout(project):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    rollout = make_rollout(project, upload=upload, label=False)
    project_attribution_refresh(project_id=project.pk)
    return rollout


def test_it_returns_none_without_an_attribution(project):
    assert attribution_panel(make_rollout(project, label=False)) is None


def test_it_gives_the_rollout_page_everything_it_needs(project, member):
    rollout = _calibrated_rollout(project)
    panel = attribution_panel(rollout, user=member)
    row = TrajectoryAttribution.objects.get(trajectory=rollout)
    assert (panel["lo"], panel["hi"], panel["rollback_step"]) == (row.lo, row.hi, row.lo)
    assert panel["point_step"] == 2 and panel["alpha"] == 0.1 and panel["calibrated"]
    assert len(panel["probabilities"]) == 6
    assert panel["figure"]["data"][0]["type"] == "bar"
    assert panel["can_label"] is True
    assert panel["sentence"] == attribution_sentence(row, point_agent=panel["point_agent"])


def test_it_phrases_the_sentence_with_confidence_steps_and_agent():
    row = TrajectoryAttribution(
        lo=12, hi=15, point_step=13, agent="WebSurfer", alpha=0.1, calibration_id=1
    )
    assert attribution_sentence(row) == (
        "With 90% confidence the decisive step is in steps 12-15 "
        "(most probability on the steps of WebSurfer)."
    )
    row.probabilities = [0.05] * 20
    assert attribution_sentence(row).endswith("steps of WebSurfer).")  # 4 of 20: narrow
    row.lo, row.hi = 1, 18
    assert attribution_sentence(row).endswith(
        "That is 18 of its 20 steps: too wide to narrow the search much yet; "
        "more labels of this agent system sharpen the sets."
    )
    row.lo, row.hi = 12, 15
    row.lo = row.hi = None
    assert attribution_sentence(row).startswith("No step reaches 90% confidence (the set is empty)")
    row.calibration_id = None
    assert attribution_sentence(row).startswith("Not calibrated yet")


def test_it_renders_the_partial_with_jump_links_and_escaped_labels(project, owner, rf):
    from attribution.labels import human_label_add
    from ingest.models import Step

    rollout = _calibrated_rollout(project)
    # An agent's name comes from the trace: untrusted text, as the label's reason is.
    Step.objects.filter(trajectory=rollout, index=2).update(agent="<img src=x onerror=alert(1)>")
    human_label_add(
        trajectory=rollout,
        step_index=2,
        agent="<img src=x onerror=alert(1)>",
        reason="<script>x</script>",
        author=owner,
    )
    panel = attribution_panel(rollout, user=owner)
    request = rf.get("/")
    request.user = owner
    html = render_to_string("attribution/_rollout_panel.html", {"panel": panel}, request=request)
    assert f'href="#step-{panel["point_step"]}"' in html
    if panel["lo"] is not None:
        assert f'href="#step-{panel["lo"]}"' in html and "Jump to rollback point" in html
    assert f'data-figure-id="{panel["figure_id"]}"' in html
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert 'name="step_index"' in html


def test_it_hides_the_form_from_a_viewer(project, viewer, rf):
    rollout = _calibrated_rollout(project)
    html = render_to_string(
        "attribution/_rollout_panel.html", {"panel": attribution_panel(rollout, user=viewer)}
    )
    assert 'name="step_index"' not in html


def test_it_appears_on_the_rollout_page(client, project, member):
    from django.urls import reverse

    rollout = _calibrated_rollout(project)
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="attribution"' in body
    assert "With 90% confidence" in body or "No step reaches 90% confidence" in body
    assert f'data-figure-id="attribution-strip-{rollout.pk}"' in body


def test_it_names_the_labels_that_set_its_tau_its_systems_not_the_projects(project, member):
    upload = make_upload(project)
    for system, count in (("Planner team", 12), ("Solo agent", 20)):
        for i in range(count):
            with_system(make_rollout(project, upload=upload, bad_step=1 + i % 3), system)
    rollout = with_system(make_rollout(project, upload=upload, label=False), "Planner team")
    project_attribution_refresh(project_id=project.pk)
    panel = attribution_panel(rollout, user=member)
    basis = panel["basis"]
    # 12 of the project's 32 calibrating labels are this system's; length 6 is bucket 1-8,
    # which holds fewer than the 30 labels for a tau of its own.
    assert (basis["system"], basis["m"], basis["group"]) == ("Planner team", 12, "1-8")
    assert not basis["own_group"] and (basis["group_m"], basis["min_group_size"]) == (12, 30)
    html = render_to_string("attribution/_rollout_panel.html", {"panel": panel})
    assert "tau from 12 labelled rollouts of Planner team, all lengths pooled" in html
    assert "bucket 1-8 holds 12 labels; it needs 30 for its own tau" in html


def test_the_sentence_says_whose_the_most_probable_step_is():
    row = TrajectoryAttribution(point_step=2, agent="sql_runner", alpha=None, labels_needed=9)
    row.trajectory = Trajectory(agent_system="data-analyst")
    # The most probable step is the planner's while sql_runner's steps hold the most mass.
    assert attribution_sentence(row, miscoverage=0.1, point_agent="planner").endswith(
        "The scorer ranks step 2 first (planner’s; the steps of sql_runner together hold the "
        "most probability)."
    )
    assert attribution_sentence(row, miscoverage=0.1, point_agent="sql_runner").endswith(
        "ranks step 2 first (sql_runner’s)."
    )
    row.labels_needed = 0
    assert attribution_sentence(row, point_agent="planner") == (
        "Not calibrated yet; the most probable decisive step is step 2 (planner’s; the steps "
        "of sql_runner together hold the most probability)."
    )


def test_the_calibrated_sentence_says_whose_the_most_probable_step_is():
    row = TrajectoryAttribution(lo=11, hi=16, point_step=16, agent="sql_runner", alpha=0.1,
                                calibration_id=1)  # fmt: skip
    assert attribution_sentence(row, point_agent="reporter") == (
        "With 90% confidence the decisive step is in steps 11-16; the most probable is step "
        "16 (reporter’s; the steps of sql_runner together hold the most probability)."
    )
    row.agent = "reporter"
    assert attribution_sentence(row, point_agent="reporter").endswith("is step 16 (reporter’s).")
