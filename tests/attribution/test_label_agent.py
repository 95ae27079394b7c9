"""The agent a decisive-step label records follows the step chosen: a user trial changed
only the step of the pre-filled form (its Agent was the scorer's "researcher") and saved
"step 13 by researcher", a step the writer took, with no word said."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from attribution.labels import human_label_add
from attribution.models import TrajectoryAttribution
from attribution.services import project_attribution_refresh
from attribution.views import MSG_LABEL_OTHER_AGENT, MSG_LABEL_SAVED
from ingest.models import Label
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _attributed_rollout(project):
    upload = make_upload(project)
    for i in range(12):
        make_rollout(project, upload=upload, bad_step=1 + i % 3)
    rollout = make_rollout(project, upload=upload, label=False, length=8)
    project_attribution_refresh(project_id=project.pk)
    return rollout


def _label_url(project, rollout):
    return reverse("attribution:label_add", kwargs={"slug": project.slug, "pk": rollout.pk})


def _panel(client, project, rollout) -> str:
    url = reverse("attribution:rollout_panel", args=[project.slug, rollout.pk])
    return client.get(url).content.decode()


def _form_fields(panel: str) -> dict[str, str]:
    """What the panel's label form sends as it stands (its inputs' values)."""
    form = panel[
        panel.index('id="label-form"') : panel.index("</form>", panel.index('id="label-form"'))
    ]
    fields = {}
    for tag in re.findall(r"<input[^>]*>", form):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and name.group(1) != "csrfmiddlewaretoken":
            fields[name.group(1)] = value.group(1) if value else ""
    return fields


def _step_of_another_agent(rollout) -> int:
    """A step whose agent is not the one the scorer finds most likely at fault."""
    row = TrajectoryAttribution.objects.get(trajectory=rollout)
    # make_rollout: odd steps are the Planner's, even ones (after the user's 0) WebSurfer's.
    return next(i for i in range(1, 8) if ("Planner" if i % 2 else "WebSurfer") != row.agent)


def test_the_forms_agent_field_starts_empty_with_a_hint(client, project, member):
    rollout = _attributed_rollout(project)
    assert TrajectoryAttribution.objects.get(trajectory=rollout).agent
    client.force_login(member)
    panel = _panel(client, project, rollout)
    assert _form_fields(panel)["agent"] == ""
    assert 'placeholder="the step’s own"' in panel
    assert "Leave the agent empty to record whoever took the step you choose." in panel


def test_changing_only_the_step_records_that_steps_agent(client, project, member):
    rollout = _attributed_rollout(project)
    step = _step_of_another_agent(rollout)
    client.force_login(member)
    fields = _form_fields(_panel(client, project, rollout))
    fields["step_index"] = str(step)
    response = client.post(_label_url(project, rollout), fields, follow=True)
    label = Label.objects.get(source="human")
    assert (label.step_index, label.agent) == (step, "Planner" if step % 2 else "WebSurfer")
    body = response.content.decode()
    assert MSG_LABEL_SAVED.format(step=step) in body and "at fault, though" not in body


def test_an_agent_named_on_purpose_is_kept_and_both_are_said(client, project, member):
    rollout = _attributed_rollout(project)
    client.force_login(member)
    response = client.post(
        _label_url(project, rollout), {"step_index": 3, "agent": "WebSurfer"}, follow=True
    )
    label = Label.objects.get(source="human")
    assert (label.step_index, label.agent) == (3, "WebSurfer")
    body = response.content.decode()
    warning = MSG_LABEL_OTHER_AGENT.format(agent="WebSurfer", step=3, step_agent="Planner")
    assert escape(MSG_LABEL_SAVED.format(step=3) + warning) in body
    assert 'class="message warning"' in body
    listed = re.sub(r"<[^>]+>", "", _panel(client, project, rollout))
    assert "step 3 · WebSurfer at fault, though the step is Planner’s" in " ".join(listed.split())


def test_the_steps_own_agent_by_name_or_role_suffix_is_no_warning(client, project, member):
    rollout = _attributed_rollout(project)
    client.force_login(member)
    response = client.post(
        _label_url(project, rollout), {"step_index": 3, "agent": "Planner"}, follow=True
    )
    body = response.content.decode()
    assert 'class="message success"' in body and "at fault, though" not in body
    assert "step 3</a> by <strong>Planner</strong>" in _panel(client, project, rollout)


def test_the_api_and_the_form_record_the_same_agent_without_one(project, member):
    # The label API passes its default "" to the same service: the step's own agent.
    rollout = _attributed_rollout(project)
    saved = human_label_add(trajectory=rollout, step_index=4, reason="", author=member)
    assert (saved.label.agent, saved.step_agent, saved.blames_another_agent) == (
        "WebSurfer",
        "WebSurfer",
        False,
    )


def test_the_panel_reads_whose_steps_they_are_once(project, owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from attribution.selectors import attribution_panel

    rollout = _attributed_rollout(project)
    human_label_add(
        trajectory=rollout, step_index=_step_of_another_agent(rollout), reason="", author=owner
    )
    with CaptureQueriesContext(connection) as captured:
        panel = attribution_panel(rollout, user=owner)
    step_reads = [q for q in captured.captured_queries if 'FROM "ingest_step"' in q["sql"]]
    # The most probable step's agent and the labelled step's, in one query.
    assert len(step_reads) == 1
    assert panel["point_agent"] and panel["labels"][0]["step_agent"]
