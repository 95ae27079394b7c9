"""Writes of the projects app: projects and their members."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from projects.models import MAX_MISCOVERAGE, MIN_MISCOVERAGE, Membership, Project, Role

MSG_BAD_NAME = "Give the project a name with at least one letter or digit."
MSG_BAD_MISCOVERAGE = (
    "miscoverage: give a number from {low} to {high} (0.1 promises sets that hold the "
    "decisive step 90% of the time)."
)
MSG_LAST_OWNER = "{user} is the project's only owner; make someone else owner first."
MSG_NOT_A_MEMBER = "{user} is not a member of this project."


class ProjectError(ValueError):
    pass


# A markup tag (``<b>``, ``</b>``, ``<br/>``): its letters are no words of the name. A "<"
# not followed by a tag name ("a < b") is left to slugify, which drops it.
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def project_slug(text: str) -> str:
    """The slug a project name (or a chosen slug) gives: its words, without markup tags,
    in ASCII.

    Example:
        >>> project_slug("WebNav synthetic <b>trial</b> Ünï")
        'webnav-synthetic-trial-uni'
        >>> project_slug("line<br>break"), project_slug("a < b")
        ('line-break', 'a-b')
    """
    return slugify(_TAG.sub(" ", text))


def _free_slug(base: str) -> str:
    slug = base[:90] or "project"
    candidate, number = slug, 2
    while Project.objects.filter(slug=candidate).exists():
        candidate = f"{slug}-{number}"
        number += 1
    return candidate


@transaction.atomic
def project_create(*, name: str, owner: User, slug: str = "", description: str = "") -> Project:
    """Create a project with the given user as its owner."""
    name = name.strip()
    base = project_slug(slug or name)
    if not name or not base:
        raise ProjectError(MSG_BAD_NAME)
    project = Project.objects.create(
        name=name[:200], slug=_free_slug(base), description=description.strip()
    )
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


@transaction.atomic
def project_member_set(*, project: Project, user: User, role: str) -> Membership:
    """Add ``user`` to the project with ``role``, or change their role. The project's only
    owner cannot be demoted (``ProjectError``)."""
    if role != Role.OWNER:
        _refuse_last_owner(project, user)
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


def _refuse_last_owner(project: Project, user: User) -> None:
    """Refuse a change that would leave the project without an owner: only an owner
    manages members and tokens, so a project without one could not be got back into from
    the product. The owner rows are locked, so two owners demoting or removing each other
    at once cannot both pass."""
    owner_ids = list(
        Membership.objects.select_for_update()
        .filter(project=project, role=Role.OWNER)
        .order_by("pk")
        .values_list("user_id", flat=True)
    )
    if owner_ids == [user.pk]:
        raise ProjectError(MSG_LAST_OWNER.format(user=user.get_username()))


@transaction.atomic
def project_member_remove(*, project: Project, user: User) -> None:
    """Take ``user`` out of the project: they no longer see it, through the pages or its
    API (the project's tokens are the project's, not theirs). The only owner stays."""
    _refuse_last_owner(project, user)
    removed, _ = Membership.objects.filter(project=project, user=user).delete()
    if not removed:
        raise ProjectError(MSG_NOT_A_MEMBER.format(user=user.get_username()))


def project_miscoverage_set(*, project: Project, value: str | float) -> bool:
    """Set the conformal miscoverage alpha the project's calibration promises; returns
    whether it changed (the caller then queues a recalibration)."""
    try:
        alpha = float(value)
    except (TypeError, ValueError):
        alpha = float("nan")
    if not MIN_MISCOVERAGE <= alpha <= MAX_MISCOVERAGE:  # also refuses NaN
        raise ProjectError(MSG_BAD_MISCOVERAGE.format(low=MIN_MISCOVERAGE, high=MAX_MISCOVERAGE))
    if abs(alpha - project.miscoverage) < 1e-12:
        return False
    project.miscoverage = alpha
    project.save(update_fields=["miscoverage"])
    return True
