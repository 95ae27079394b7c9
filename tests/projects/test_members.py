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


def test_an_owner_removes_a_member_who_then_sees_nothing(client, owner, member, project):
    client.force_login(owner)
    page = client.get(_settings_url(project)).content.decode()
    # A new member is a viewer unless the owner picks more (it was owner by default).
    assert '<option value="viewer" selected>Viewer</option>' in page
    assert 'aria-label="Remove member from the project"' in page
    response = client.post(
        _settings_url(project), {"action": "remove_member", "user": member.pk}, follow=True
    )
    assert "member is no longer a member of this project." in response.content.decode()
    assert not Membership.objects.filter(project=project, user=member).exists()
    client.force_login(member)
    assert client.get(reverse("dashboard:project_detail", args=[project.slug])).status_code == 404


@pytest.mark.parametrize("user_field", ["999999", "99999999999999999999999", "x", ""])
def test_removing_no_such_user_says_so(client, owner, project, user_field):
    client.force_login(owner)
    response = client.post(
        _settings_url(project), {"action": "remove_member", "user": user_field}, follow=True
    )
    assert response.status_code == 200
    assert "No user with that name." in response.content.decode()


def test_the_only_owner_cannot_be_removed_and_a_member_cannot_remove(
    client, owner, member, project
):
    client.force_login(owner)
    response = client.post(
        _settings_url(project), {"action": "remove_member", "user": owner.pk}, follow=True
    )
    assert MSG_LAST_OWNER.format(user="owner").replace("'", "&#x27;") in response.content.decode()
    assert _role(project, owner) == Role.OWNER
    client.force_login(member)
    refused = client.post(_settings_url(project), {"action": "remove_member", "user": owner.pk})
    assert refused.status_code == 403
    assert _role(project, owner) == Role.OWNER


def test_an_owner_who_removes_themselves_goes_to_their_projects(client, owner, member, project):
    project_member_set(project=project, user=member, role=Role.OWNER)
    client.force_login(owner)
    response = client.post(_settings_url(project), {"action": "remove_member", "user": owner.pk})
    assert response.status_code == 302 and response.url == reverse("dashboard:project_list")
    assert not Membership.objects.filter(project=project, user=owner).exists()
