"""The token's project and the project's API tokens (read-only here).

Tokens are issued and revoked on the project settings page, by an owner logged in with a
session, not through the API: a token able to mint tokens would let whoever leaked one
keep access after its revocation, and the API would need a second authentication (session
with CSRF) just for this. The API lists them (names, prefixes, last use), so a script can
check which token it holds and when each was last used.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from dashboard.api.auth import request_project
from dashboard.api.errors import errors_documented
from dashboard.api.schemas import (
    ProjectList,
    ProjectOut,
    TokenList,
    TokenOut,
    ToolList,
    ToolOut,
)
from pipeline.overview import stored_tools
from pipeline.overview_cards import overview_cards
from projects.models import ApiToken, Project

router = Router(tags=["projects"])


def project_out(project: Project) -> ProjectOut:
    return ProjectOut(
        slug=project.slug,
        name=project.name,
        description=project.description,
        miscoverage=project.miscoverage,
        created_at=project.created_at,
        counts=overview_cards(project=project),  # type: ignore[arg-type]
    )


def token_out(token: ApiToken) -> TokenOut:
    return TokenOut(
        id=token.pk,
        name=token.name,
        prefix=token.prefix,
        active=token.revoked_at is None,
        created_by=token.created_by.get_username() if token.created_by else "",
        created_at=token.created_at,
        last_used_at=token.last_used_at,
        revoked_at=token.revoked_at,
    )


@router.get(
    "/projects",
    response={200: ProjectList, **errors_documented(404)},
    url_name="project_list",
    summary="The token's project",
)
def project_list(request: HttpRequest) -> ProjectList:
    """A token belongs to one project: the list holds that one."""
    return ProjectList(projects=[project_out(request_project(request))])


@router.get(
    "/projects/{slug:slug}",
    response={200: ProjectOut, **errors_documented(404)},
    url_name="project_detail",
    summary="A project and its counts",
)
def project_detail(request: HttpRequest, slug: str) -> ProjectOut:
    return project_out(request_project(request))


@router.get(
    "/projects/{slug:slug}/tokens",
    response={200: TokenList, **errors_documented(404)},
    url_name="token_list",
    summary="The project's API tokens (issue and revoke them on the settings page)",
)
def token_list(request: HttpRequest, slug: str) -> TokenList:
    project = request_project(request)
    rows = ApiToken.objects.filter(project=project).select_related("created_by").order_by("id")
    return TokenList(tokens=[token_out(row) for row in rows])


@router.get(
    "/projects/{slug:slug}/tools",
    response={200: ToolList, **errors_documented(404)},
    url_name="tool_list",
    summary="The tools the project's agents call: calls, errors, failure lift (most called first)",
)
def tool_list(request: HttpRequest, slug: str) -> ToolList:
    """As the overview's tools table, counted by the refresh after each upload."""
    rows, counted_at = stored_tools(project=request_project(request))
    return ToolList(counted_at=counted_at, tools=[ToolOut(**row) for row in rows or []])
