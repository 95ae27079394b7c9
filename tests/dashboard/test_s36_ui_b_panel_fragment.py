"""The rollout page's attribution panel on its own: what labelling.js swaps in after a label
is saved or removed, rendered by the same selector and template as the page's panel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from attribution.services import project_attribution_refresh
from attribution.views import NEXT_PANEL
from ingest.models import Label
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db


@pytest.fixture
def rollout(project):
    rollout = make_rollout(project, label=False)
    project_attribution_refresh(project_id=project.pk)
    return rollout


def _panel_url(project, rollout):
    return reverse("attribution:rollout_panel", args=[project.slug, rollout.pk])


def _add_url(project, rollout):
    return reverse("attribution:label_add", args=[project.slug, rollout.pk])


def test_it_renders_the_panel_alone(client, project, member, rollout):
    client.force_login(member)
    response = client.get(_panel_url(project, rollout))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="attribution"' in html
    assert "<html" not in html and 'id="label-form"' in html


def test_it_answers_a_label_from_the_script_with_the_new_panel(client, project, member, rollout):
    client.force_login(member)
    response = client.post(
        _add_url(project, rollout), {"step_index": 2, "next": NEXT_PANEL}, follow=True
    )
    html = response.content.decode()
    assert response.redirect_chain == [(_panel_url(project, rollout), 302)]
    assert "<html" not in html
    assert "Label saved: step 2." in html
    assert 'data-jump="2">step 2</a>' in html[html.index('class="attribution-labels"') :]


def test_it_answers_a_removal_from_the_script_with_the_new_panel(client, project, member, rollout):
    client.force_login(member)
    client.post(_add_url(project, rollout), {"step_index": 2})
    label = Label.objects.get(source="human")
    delete = reverse("attribution:label_delete", args=[project.slug, rollout.pk, label.pk])
    response = client.post(delete, {"next": NEXT_PANEL}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain == [(_panel_url(project, rollout), 302)]
    assert "Label of step 2 removed." in html
    assert 'class="attribution-labels"' not in html


def test_it_sends_a_plain_form_and_any_other_next_to_the_page(client, project, member, rollout):
    client.force_login(member)
    page = reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]) + "#attribution"
    for extra in ({}, {"next": "https://evil.example/"}, {"next": _panel_url(project, rollout)}):
        response = client.post(_add_url(project, rollout), {"step_index": 1, **extra})
        assert response["Location"] == page


def test_it_shows_a_viewer_the_panel_without_the_label_form(client, project, viewer, rollout):
    client.force_login(viewer)
    html = client.get(_panel_url(project, rollout)).content.decode()
    assert 'id="attribution"' in html and 'id="label-form"' not in html


def test_it_hides_the_panel_from_an_outsider(client, project, outsider, rollout):
    client.force_login(outsider)
    assert client.get(_panel_url(project, rollout)).status_code == 404


def test_it_is_not_found_for_a_rollout_without_attribution(client, project, member):
    rollout = make_rollout(project, label=False)
    client.force_login(member)
    assert client.get(_panel_url(project, rollout)).status_code == 404


def test_it_escapes_the_trace_text_it_shows(client, project, member, rollout):
    client.force_login(member)
    html = client.post(
        _add_url(project, rollout),
        {"step_index": 2, "reason": "<script>alert(1)</script>", "next": NEXT_PANEL},
        follow=True,
    ).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
