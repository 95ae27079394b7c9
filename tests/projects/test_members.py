"""Members and roles: a project always keeps an owner, or nobody could manage it again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import Membership, Project, Role
from projects.services import MSG_LAST_OWNER, ProjectError, project_member_set

pytestmark = pytest.mark.django_db


def _settings_url(project: Project) -> str:
    return reverse("dashboard:project_settings", args=[project.slug])


def _role(project: Project, user) -> str:
    return Membership.objects.get(project=project, user=user).role


@pytest.mark.parametrize("role", [Role.MEMBER, Role.VIEWER])
def test_it_refuses_to_demote_the_only_owner(owner, project, role):
    with pytest.raises(ProjectError, match="make someone else owner first"):
        project_member_set(project=project, user=owner, role=role)
    assert _role(project, owner) == Role.OWNER


def test_it_lets_an_owner_step_down_once_someone_else_is_owner(owner, member, project):
    project_member_set(project=project, user=member, role=Role.OWNER)
    project_member_set(project=project, user=owner, role=Role.VIEWER)
    assert _role(project, owner) == Role.VIEWER
    assert _role(project, member) == Role.OWNER


def test_it_lets_the_only_owner_stay_owner(owner, project):
    project_member_set(project=project, user=owner, role=Role.OWNER)
    assert _role(project, owner) == Role.OWNER


def test_it_says_why_on_the_settings_page(client, owner, project):
    client.force_login(owner)
    response = client.post(
        _settings_url(project),
        {"action": "member", "username": "owner", "role": "viewer"},
        follow=True,
    )
    page = response.content.decode()
    assert MSG_LAST_OWNER.format(user="owner").replace("'", "&#x27;") in page
    assert "owner is now viewer" not in page
    assert _role(project, owner) == Role.OWNER
    # The owner's forms are still there.
    assert 'value="token"' in page and 'value="member"' in page
