"""A missing page answers 404 in the site's layout, with a way back to the projects."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_it_answers_a_missing_rollout_with_the_sites_404_page(client, project, member):
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, 999_999]))
    html = response.content.decode()
    assert response.status_code == 404
    assert 'id="not-found"' in html and 'class="topbar"' in html
    assert f'href="{reverse("dashboard:project_list")}">Your projects</a>' in html
    assert "Log out" in html


def test_it_shows_the_404_page_to_a_visitor_who_is_not_logged_in(client):
    response = client.get("/no-such-page/<script>alert(1)</script>")
    html = response.content.decode()
    assert response.status_code == 404
    assert 'id="not-found"' in html and "Log out" not in html
    assert "<script>alert(1)" not in html


def test_api_paths_still_answer_404_in_json(client, project, member):
    client.force_login(member)
    response = client.get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
