"""Failed log-ins are throttled by django-axes: after the limit, even the right password is
refused with MSG_LOGIN_LOCKED until the cool-off has passed."""

from __future__ import annotations

import pytest
from django.conf import settings

from projects.security import MSG_LOGIN_LOCKED

pytestmark = pytest.mark.django_db

LOGIN = "/login/"


def _log_in(client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def test_it_refuses_the_right_password_after_the_failure_limit(client, owner):
    # The failure that reaches the limit is already answered with the lockout page.
    statuses = [
        _log_in(client, "owner", "wrong-password").status_code
        for _ in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    response = _log_in(client, "owner", "owner-pass-123")
    assert response.status_code == 429
    assert MSG_LOGIN_LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_lets_a_user_in_below_the_failure_limit(client, owner):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _log_in(client, "owner", "wrong-password")
    response = _log_in(client, "owner", "owner-pass-123")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)


def test_it_locks_only_the_username_that_failed(client, owner, member):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _log_in(client, "owner", "wrong-password")
    assert _log_in(client, "member", "member-pass-123").status_code == 302


def test_it_still_lets_the_test_client_log_in_without_a_request(client, owner):
    assert client.login(username="owner", password="owner-pass-123")
