"""Human corrections: stored with their author, checked, used by the exports."""

from __future__ import annotations

import pytest

from exports.models import Correction
from exports.selectors import correction_context
from exports.services import (
    MSG_BAD_ARGS,
    MSG_NO_CONTENT,
    MSG_NO_STEP,
    MSG_NOT_ACTION,
    CorrectionError,
    correction_save,
)
from ingest.models import Trajectory

pytestmark = pytest.mark.django_db


def _rollout(project, external_id="a1"):
    return Trajectory.objects.get(project=project, external_id=external_id)


def test_it_stores_a_tool_call_correction_with_its_author(small_project, owner):
    correction = correction_save(
        rollout=_rollout(small_project),
        step_index=3,
        kind="tool_call",
        author=owner,
        tool_name="cancel",
        tool_args='{"id": "GOOD"}',
    )
    assert (correction.tool_name, correction.tool_args, correction.author) == (
        "cancel",
        {"id": "GOOD"},
        owner,
    )


def test_it_keeps_one_correction_per_step(small_project, owner, member):
    rollout = _rollout(small_project)
    correction_save(rollout=rollout, step_index=2, kind="message", author=owner, content="a")
    correction_save(rollout=rollout, step_index=2, kind="message", author=member, content="b")
    assert list(Correction.objects.values_list("content", "author__username")) == [("b", "member")]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"step_index": 99, "kind": "message", "content": "x"}, MSG_NO_STEP.format(step=99)),
        ({"step_index": 1, "kind": "message", "content": "x"}, MSG_NOT_ACTION),
        ({"step_index": 4, "kind": "message", "content": "x"}, MSG_NOT_ACTION),
        ({"step_index": 2, "kind": "message", "content": "  "}, MSG_NO_CONTENT),
        (
            {"step_index": 3, "kind": "tool_call", "tool_name": "cancel", "tool_args": "[1]"},
            MSG_BAD_ARGS,
        ),
        (
            {"step_index": 3, "kind": "tool_call", "tool_name": "cancel", "tool_args": "{oops"},
            MSG_BAD_ARGS,
        ),
    ],
)
def test_it_explains_a_bad_correction(small_project, owner, fields, message):
    with pytest.raises(CorrectionError) as caught:
        correction_save(rollout=_rollout(small_project), author=owner, **fields)
    assert str(caught.value) == message


def test_it_gives_the_form_its_context(small_project):
    context = correction_context(rollout=_rollout(small_project))
    assert context["correction_step"] == 3
    assert context["correction_from_success"].source_rollout == "ok"
    assert context["corrections"] == []


def test_it_saves_from_the_form_and_returns_to_the_step(client, small_project, member):
    client.force_login(member)
    rollout = _rollout(small_project)
    response = client.post(
        f"/p/{small_project.slug}/exports/rollouts/{rollout.pk}/correction",
        {
            "step_index": "3",
            "kind": "tool_call",
            "tool_name": "cancel",
            "tool_args": '{"id": "GOOD"}',
        },
    )
    assert response.status_code == 302 and response["Location"].endswith(
        f"/rollouts/{rollout.pk}/#step-3"
    )
    assert Correction.objects.get().author == member


def test_it_renders_the_partial(small_project, owner, rf):
    from django.template.loader import render_to_string

    from projects.access import membership_of

    rollout = _rollout(small_project)
    correction_save(
        rollout=rollout, step_index=2, kind="message", author=owner, content="<b>ask</b> first"
    )
    html = render_to_string(
        "exports/_correction_form.html",
        {
            "project": small_project,
            "rollout": rollout,
            "membership": membership_of(owner, small_project.pk),
            **correction_context(rollout=rollout),
        },
        request=rf.get("/"),
    )
    assert "&lt;b&gt;ask&lt;/b&gt; first" in html and 'id="correction-form"' in html
    assert "from a successful rollout" in html


def test_viewers_cannot_correct(client, small_project, viewer):
    client.force_login(viewer)
    rollout = _rollout(small_project)
    response = client.post(
        f"/p/{small_project.slug}/exports/rollouts/{rollout.pk}/correction",
        {"step_index": "2", "kind": "message", "content": "x"},
    )
    assert response.status_code == 403 and not Correction.objects.exists()


def test_outsiders_get_404_on_corrections(client, small_project, outsider):
    client.force_login(outsider)
    rollout = _rollout(small_project)
    response = client.post(
        f"/p/{small_project.slug}/exports/rollouts/{rollout.pk}/correction",
        {"step_index": "2", "kind": "message", "content": "x"},
    )
    assert response.status_code == 404


def test_it_removes_a_correction(client, small_project, owner):
    rollout = _rollout(small_project)
    correction = correction_save(
        rollout=rollout, step_index=2, kind="message", author=owner, content="x"
    )
    client.force_login(owner)
    response = client.post(
        f"/p/{small_project.slug}/exports/rollouts/{rollout.pk}/correction/{correction.pk}/delete"
    )
    assert response.status_code == 302 and not Correction.objects.exists()


def test_the_rollout_page_shows_the_correction_form(client, small_project, member):
    client.force_login(member)
    rollout = _rollout(small_project)
    response = client.get(f"/p/{small_project.slug}/rollouts/{rollout.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="correction-form"' in body
    assert f'action="/p/{small_project.slug}/exports/rollouts/{rollout.pk}/correction"' in body
