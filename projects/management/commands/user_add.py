"""``manage.py user_add USERNAME``: an account for a teammate, who is then added to
projects by an owner on a project's Settings page (by username). The password is made up
and printed once, unless one is given on standard input (``--password-stdin``); the user
changes it after logging in (the "Password" link beside their name)."""

from __future__ import annotations

import secrets
import sys
from typing import Any

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

PASSWORD_BYTES = 12


class Command(BaseCommand):
    help = "Create a user account (a teammate), printing a made-up password once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from standard input instead of making one up",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        username = options["username"].strip()
        try:
            users.username_validator(username)
        except ValidationError as error:
            raise CommandError(f"username: {' '.join(error.messages)}") from None
        if users.objects.filter(username=username).exists():
            raise CommandError(f"username: a user called {username!r} exists already.")
        made_up = not options["password_stdin"]
        password = (
            secrets.token_urlsafe(PASSWORD_BYTES) if made_up else sys.stdin.readline().rstrip("\n")
        )
        user = users(username=username, email=options["email"])
        try:
            password_validation.validate_password(password, user)
        except ValidationError as error:
            raise CommandError(f"password: {' '.join(error.messages)}") from None
        user.set_password(password)
        user.save()
        self.stdout.write(f"Created user {username}.")
        if made_up:
            self.stdout.write(f"Password (shown once): {password}")
        self.stdout.write(
            "An owner adds them to a project on its Settings page, by username, as viewer, "
            "member or owner."
        )
