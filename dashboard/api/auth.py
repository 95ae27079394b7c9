"""The API's one authentication: a project token as ``Authorization: Bearer <token>``.

It runs before ninja reads any parameter, so a caller without the project's token learns
nothing (not even which inputs are wrong). Every refusal, a missing header included, is a
:class:`projects.tokens.TokenRefused`: a 404 counted by the token throttle. ninja's own
401 for a missing header is never used, so one rule holds for every endpoint.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer

from projects.models import ApiToken, Project
from projects.tokens import active_token

# Where the authentication leaves the token's row on the request.
TOKEN_ATTRIBUTE = "faultline_api_token"


def bearer_token(request: HttpRequest) -> str:
    """The token of an ``Authorization: Bearer`` header, or ""."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class ProjectToken(HttpBearer):
    """The project named by the URL's ``slug`` whose active token the request carries;
    without a slug in the URL, the token's own project. ``request.auth`` is the project,
    :func:`request_token` the token."""

    def __call__(self, request: HttpRequest) -> Project:
        match = request.resolver_match
        slug = match.kwargs.get("slug") if match is not None else None
        row = active_token(bearer_token(request), None if slug is None else str(slug))
        setattr(request, TOKEN_ATTRIBUTE, row)
        return row.project

    def authenticate(self, request: HttpRequest, token: str) -> Project:
        return self(request)


def request_project(request: HttpRequest) -> Project:
    """The project the authentication resolved (ninja sets ``request.auth``)."""
    project = getattr(request, "auth", None)
    assert isinstance(project, Project), "the API's views all run behind ProjectToken"
    return project


def request_token(request: HttpRequest) -> ApiToken:
    """The API token the request was authenticated with."""
    row = getattr(request, TOKEN_ATTRIBUTE, None)
    assert isinstance(row, ApiToken), "the API's views all run behind ProjectToken"
    return row
