"""After a refused log-in the page keeps the username typed (it cleared it), never the
password, and puts the focus on the password."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.utils.html import escape

pytestmark = pytest.mark.django_db

LOGIN = "/login/"
WRONG = "wrong-password-123"


def _input(html: str, name: str) -> str:
    found = re.search(rf'<input type="[a-z]+" name="{name}"[^>]*>', html)
    assert found, f"no {name} input"
    return found.group(0)


def _log_in(client, username: str, password: str) -> str:
    return client.post(LOGIN, {"username": username, "password": password}).content.decode()


def test_it_keeps_the_username_after_a_wrong_password(client, owner):
    html = _log_in(client, "owner", WRONG)
    assert "didn't match" in html
    assert 'value="owner"' in _input(html, "username")
    assert "autofocus" in _input(html, "password")
    assert "autofocus" not in _input(html, "username")


def test_it_never_sends_the_password_back(client, owner):
    html = _log_in(client, "owner", WRONG)
    assert WRONG not in html
    assert "value=" not in _input(html, "password")


def test_it_escapes_the_typed_username(client):
    typed = '"><script>alert(1)</script>'
    html = _log_in(client, typed, WRONG)
    assert f'value="{escape(typed)}"' in _input(html, "username")
    assert "<script>alert(1)" not in html


def test_it_keeps_the_username_on_the_lockout_page(client, owner):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _log_in(client, "owner", WRONG)
    response = client.post(LOGIN, {"username": "owner", "password": WRONG})
    assert response.status_code == 429
    html = response.content.decode()
    assert 'value="owner"' in _input(html, "username") and WRONG not in html


def test_the_empty_page_focuses_the_username(client):
    html = client.get(LOGIN).content.decode()
    assert 'value=""' in _input(html, "username") and "autofocus" in _input(html, "username")
