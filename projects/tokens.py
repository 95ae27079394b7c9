"""Project API tokens: only a hash is stored, the token itself is shown once."""

from __future__ import annotations

import hashlib
import secrets

from django.http import Http404

from projects.models import Project

TOKEN_PREFIX = "flt_"
MSG_NO_PROJECT = "No such project."


def hash_token(token: str) -> str:
    """The stored form of a token.

    Example:
        >>> len(hash_token("flt_abc"))
        64
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def project_token_issue(*, project: Project) -> str:
    """Make a new API token for the project, keep only its hash, and return it once."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    project.api_token_hash = hash_token(token)
    project.api_token_prefix = token[:10]
    project.save(update_fields=["api_token_hash", "api_token_prefix"])
    return token


def project_for_token(token: str, slug: str) -> Project:
    """The project that this API token belongs to, if its slug matches; else 404."""
    if not token:
        raise Http404(MSG_NO_PROJECT)
    project = Project.objects.filter(slug=slug, api_token_hash=hash_token(token)).first()
    if project is None:
        raise Http404(MSG_NO_PROJECT)
    return project
