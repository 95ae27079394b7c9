"""Who may see and change a project: one decorator for every project page.

Outsiders (and anonymous users) get 404, never a hint that the project exists; viewers
who try to change something get 403 through Django's ``PermissionDenied``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

from django.contrib.auth.models import AnonymousUser, User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase

from projects.models import Membership, Role

MSG_NO_PROJECT = "No such project."
MSG_READ_ONLY = "Viewers cannot change this project."
MSG_OWNERS_ONLY = "Only owners change project settings."

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponseBase)


def membership_for_user(user: User | AnonymousUser, slug: str) -> Membership:
    """The user's membership of the project with this slug, with the project; else 404."""
    if not user.is_authenticated:
        raise Http404(MSG_NO_PROJECT)
    membership = (
        Membership.objects.select_related("project").filter(project__slug=slug, user=user).first()
    )
    if membership is None:
        raise Http404(MSG_NO_PROJECT)
    return membership


def require_writer(membership: Membership, message: str = MSG_READ_ONLY) -> None:
    if not membership.can_write:
        raise PermissionDenied(message)


def require_owner(membership: Membership) -> None:
    if membership.role != Role.OWNER:
        raise PermissionDenied(MSG_OWNERS_ONLY)


def project_view(
    *,
    write: bool = False,
    write_unsafe: bool = False,
    owner_unsafe: bool = False,
    read_only_message: str = MSG_READ_ONLY,
) -> Callable[
    [Callable[Concatenate[HttpRequest, Membership, P], R]],
    Callable[Concatenate[HttpRequest, str, P], HttpResponseBase],
]:
    """Resolve ``slug`` from the URL to the caller's membership and check the role.

    ``write`` demands a writer for every request; ``write_unsafe`` only for methods that
    change state (POST and the like); ``owner_unsafe`` demands an owner for those;
    ``read_only_message`` is what a refused viewer reads. The view
    gets the membership (and through it the project) instead of the slug. Anonymous users
    are sent to the login page, as ``login_required`` would.
    """

    def decorator(
        view: Callable[Concatenate[HttpRequest, Membership, P], R],
    ) -> Callable[Concatenate[HttpRequest, str, P], HttpResponseBase]:
        @wraps(view)
        def wrapped(request: HttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> Any:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            membership = membership_for_user(request.user, slug)
            unsafe = request.method not in SAFE_METHODS
            if write or (write_unsafe and unsafe):
                require_writer(membership, read_only_message)
            if owner_unsafe and unsafe:
                require_owner(membership)
            return view(request, membership, *args, **kwargs)

        return wrapped

    return decorator


def membership_of(user: User | AnonymousUser, project_id: int) -> Membership | None:
    """The user's membership of a project they are known to reach (None for outsiders)."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(project_id=project_id, user=user).first()
