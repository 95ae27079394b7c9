"""Accounts for a team: ``manage.py user_add`` makes one (a made-up password shown once,
or one read from standard input), and a user changes their own password on /password/."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_it_creates_a_user_with_a_password_shown_once():
    out = io.StringIO()
    call_command("user_add", "ana", "--email", "ana@example.com", stdout=out)
    said = out.getvalue()
    password = said.split("Password (shown once): ")[1].split("\n")[0]
    user = get_user_model().objects.get(username="ana")
    assert user.check_password(password) and len(password) >= 12
    assert user.email == "ana@example.com" and not user.is_superuser
    assert "Settings page, by username" in said


def test_it_takes_a_password_from_standard_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery\n"))
    out = io.StringIO()
    call_command("user_add", "ben", "--password-stdin", stdout=out)
    assert get_user_model().objects.get(username="ben").check_password("correct horse battery")
    assert "shown once" not in out.getvalue()


@pytest.mark.parametrize(
    ("args", "stdin", "said"),
    [
        (["member"], "", "username: a user called 'member' exists already."),
        (["no spaces please"], "", "username: Enter a valid username."),
        (["cara", "--password-stdin"], "short\n", "password: This password is too short."),
    ],
)
def test_it_refuses_bad_input_naming_the_field(member, monkeypatch, args, stdin, said):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with pytest.raises(CommandError) as caught:
        call_command("user_add", *args, stdout=io.StringIO())
    assert said in str(caught.value)
    assert get_user_model().objects.filter(username="cara").count() == 0


def test_a_user_changes_their_password_from_the_top_bar(client, member, project):
    assert client.login(username="member", password="member-pass-123")
    page = client.get(reverse("dashboard:project_list")).content.decode()
    assert f'href="{reverse("password_change")}"' in page
    wrong = client.post(
        reverse("password_change"),
        {"old_password": "nope", "new_password1": "a-new-pass-9", "new_password2": "a-new-pass-9"},
    )
    assert "Your old password was entered incorrectly" in wrong.content.decode()
    done = client.post(
        reverse("password_change"),
        {
            "old_password": "member-pass-123",
            "new_password1": "a-new-pass-9",
            "new_password2": "a-new-pass-9",
        },
        follow=True,
    )
    assert 'id="password-changed"' in done.content.decode()
    member.refresh_from_db()
    assert member.check_password("a-new-pass-9")
    # Still logged in here.
    assert client.get(reverse("dashboard:project_detail", args=[project.slug])).status_code == 200


def test_the_password_page_asks_an_anonymous_visitor_to_log_in(client):
    response = client.get(reverse("password_change"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
