"""Who may see and change a project. Non-members get 404, never a hint that it exists."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from dashboard.models import Membership, Project, Role
from faultline.security import TokenRefused

MSG_READ_ONLY = "Viewers cannot change this project."
TOKEN_PREFIX = "flt_"


def project_for_user(user: User | AnonymousUser, slug: str, *, write: bool = False) -> Project:
    """The project with this slug if the user is a member (a writer when write=True)."""
    if not user.is_authenticated:
        raise Http404("No such project.")
    membership = (
        Membership.objects.select_related("project").filter(project__slug=slug, user=user).first()
    )
    if membership is None:
        raise Http404("No such project.")
    if write and membership.role == Role.VIEWER:
        raise PermissionError(MSG_READ_ONLY)
    return membership.project


def membership_for(user: User | AnonymousUser, project: Project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(project=project, user=user).first()


def hash_token(token: str) -> str:
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
    # TokenRefused is a 404 that faultline.security's throttle counts per client address.
    if not token:
        raise TokenRefused("No such project.")
    project = Project.objects.filter(slug=slug, api_token_hash=hash_token(token)).first()
    if project is None:
        raise TokenRefused("No such project.")
    return project
