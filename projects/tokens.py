"""Project API tokens: several per project, each named, shown once, stored as a hash,
revocable, with its last use recorded.

A refused token raises :class:`TokenRefused`, a 404 (a wrong token never tells whether the
project exists) that the throttle middleware counts per client address.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any, cast

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from projects.models import ApiToken, Project

TOKEN_PREFIX = "flt_"
PREFIX_SHOWN = 12
MSG_NO_PROJECT = "No such project."
MSG_TOKEN_NAME = "Give the token a name (what uses it: a CI job, an agent, a script)."
# Recording every use would write a row per API request; once a minute is plenty.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenRefused(Http404):
    """An API request whose token matches no active token of the project."""


class TokenError(ValueError):
    pass


def hash_token(token: str) -> str:
    """The stored form of a token.

    Example:
        >>> len(hash_token("flt_abc"))
        64
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_issue(
    *, project: Project, name: str, user: AbstractBaseUser | AnonymousUser | None = None
) -> tuple[ApiToken, str]:
    """Make a new named token; only its hash is kept, the token is returned once."""
    name = name.strip()[:100]
    if not name:
        raise TokenError(MSG_TOKEN_NAME)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        project=project,
        name=name,
        prefix=token[:PREFIX_SHOWN],
        token_hash=hash_token(token),
        # Typed loosely: AUTH_USER_MODEL is whatever the project configures.
        created_by=cast(Any, user) if user is not None and user.is_authenticated else None,
    )
    return row, token


def project_token_issue(*, project: Project, name: str = "API token") -> str:
    """A new token of the project, as a string (scripts, tests, the demo)."""
    return token_issue(project=project, name=name)[1]


def token_revoke(*, token: ApiToken) -> None:
    """Refuse the token from now on (idempotent)."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def _active(token: str) -> ApiToken | None:
    if not token:
        return None
    row = (
        ApiToken.objects.select_related("project")
        .filter(token_hash=hash_token(token), revoked_at__isnull=True)
        .first()
    )
    if row is None:
        return None
    now = timezone.now()
    if row.last_used_at is not None and row.last_used_at >= now - LAST_USED_RESOLUTION:
        return row  # fresh enough: no write (every OTLP export carries the token)
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ApiToken.objects.filter(stale, pk=row.pk).update(last_used_at=now)
    return row


def active_token(token: str, slug: str | None = None) -> ApiToken:
    """The active API token row (its project loaded), of the project ``slug`` when given;
    raises :class:`TokenRefused` otherwise."""
    row = _active(token)
    if row is None:
        raise TokenRefused(MSG_NO_PROJECT)
    if slug is not None and row.project.slug != slug:
        # A real token on another project's address: the same 404 (it never tells whether
        # that project exists), but not counted as a guess: ten slips of a script that
        # mixed up two projects' slugs locked the address out, live agents' spans too.
        raise Http404(MSG_NO_PROJECT)
    return row


def project_for_token(token: str, slug: str) -> Project:
    """The project that this active API token belongs to, if its slug matches."""
    return active_token(token, slug).project


def project_for_bearer_token(token: str) -> Project:
    """The project of this active API token, for endpoints without a slug (OTLP)."""
    return active_token(token).project
