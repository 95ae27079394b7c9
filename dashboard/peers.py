"""The project's navigation links across apps, and the rollout page's attribution panel."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from attribution.selectors import attribution_panel as _attribution_panel


def attribution_panel(rollout: Any, *, user: Any = None) -> dict[str, Any] | None:
    """The attribution panel of this rollout (None when it has no attribution yet)."""
    return _attribution_panel(rollout, user=user)


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
