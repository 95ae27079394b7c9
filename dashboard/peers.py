"""What the dashboard's pages read from the attribution, analysis and exports apps.

One place for these cross-app reads keeps the dashboard's views and selectors free of
the other apps' model details.
"""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch, reverse

from analysis.selectors import misbehaviour_summary as _misbehaviour_summary
from attribution.selectors import attribution_panel as _attribution_panel
from dashboard.models import Project


def url_or_blank(name: str, **kwargs: Any) -> str:
    try:
        return reverse(name, kwargs=kwargs)
    except NoReverseMatch:
        return ""


def attribution_panel(rollout: Any, *, user: Any = None) -> dict[str, Any] | None:
    """The attribution panel of this rollout (None when it has no attribution yet)."""
    return _attribution_panel(rollout, user=user)


def misbehaviour_summary(project: Project) -> list[dict[str, Any]]:
    return list(_misbehaviour_summary(project))


def project_nav_links(slug: str) -> list[tuple[str, str, str]]:
    """(key, label, url) of the project's pages."""
    return [
        ("overview", "Overview", reverse("dashboard:project_detail", kwargs={"slug": slug})),
        ("rollouts", "Rollouts", reverse("dashboard:rollout_list", kwargs={"slug": slug})),
        (
            "misbehaviours",
            "Misbehaviours",
            reverse("analysis:misbehaviour_list", kwargs={"slug": slug}),
        ),
        ("calibration", "Calibration", reverse("attribution:calibration", kwargs={"slug": slug})),
        ("exports", "Exports", reverse("exports:index", kwargs={"slug": slug})),
        ("uploads", "Uploads", reverse("dashboard:uploads", kwargs={"slug": slug})),
        ("settings", "Settings", reverse("dashboard:project_settings", kwargs={"slug": slug})),
    ]
