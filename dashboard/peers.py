"""What the dashboard reads from the attribution and analysis apps, when they provide it.

Those apps are built alongside the dashboard; each accessor returns None (or an empty
value) when the other app's selector, model or page is not there yet, so every page still
renders and shows what exists.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.apps import apps
from django.db.models import Model
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import NoReverseMatch, reverse

ATTRIBUTION_PANEL_TEMPLATE = "attribution/_rollout_panel.html"


def peer_function(module: str, name: str) -> Any | None:
    """A name (function, list...) of another app's module; None while it has none."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def model(app_label: str, *names: str) -> type[Model] | None:
    """The first of these models that the app defines."""
    for name in names:
        try:
            return apps.get_model(app_label, name)
        except LookupError:
            continue
    return None


def url_or_blank(name: str, **kwargs: Any) -> str:
    try:
        return reverse(name, kwargs=kwargs)
    except NoReverseMatch:
        return ""


def template_exists(name: str) -> bool:
    try:
        get_template(name)
    except TemplateDoesNotExist:
        return False
    return True


def attribution_panel(rollout: Any, *, user: Any = None) -> Any | None:
    """The attribution app's panel for this rollout (None: not attributed, or no app)."""
    selector = peer_function("attribution.selectors", "attribution_panel")
    if selector is None or not template_exists(ATTRIBUTION_PANEL_TEMPLATE):
        return None
    try:
        return selector(rollout, user=user)
    except TypeError:  # a selector without the user keyword
        return selector(rollout)


def misbehaviour_summary(project: Any) -> Any | None:
    selector = peer_function("analysis.selectors", "misbehaviour_summary")
    return None if selector is None else selector(project)


def app_page_url(namespace: str, slug: str, *, prefer: str = "") -> str:
    """The URL of an app's page under /p/<slug>/: the one whose name contains ``prefer``,
    else its index (empty route); blank when the app has no such page (yet)."""
    module = peer_function(
        f"{namespace if namespace != 'exports' else 'dashboard.exports'}.urls", "urlpatterns"
    )
    candidates = []
    for pattern in module or []:
        name = getattr(pattern, "name", None)
        route = str(getattr(pattern, "pattern", ""))
        if not name or "<" in route:
            continue
        rank = 0 if prefer and prefer in name else (1 if route in ("", "^$") else 2)
        candidates.append((rank, name))
    for _, name in sorted(candidates):
        url = url_or_blank(f"{namespace}:{name}", slug=slug)
        if url:
            return url
    return ""


def project_nav_links(slug: str) -> list[tuple[str, str, str]]:
    """(key, label, url) of the project's pages, only those whose URL resolves."""
    links = [
        ("overview", "Overview", url_or_blank("dashboard:project_detail", slug=slug)),
        ("rollouts", "Rollouts", url_or_blank("dashboard:rollout_list", slug=slug)),
        ("misbehaviours", "Misbehaviours", app_page_url("analysis", slug, prefer="list")),
        ("calibration", "Calibration", app_page_url("attribution", slug, prefer="calibration")),
        ("exports", "Exports", app_page_url("exports", slug, prefer="list")),
        ("uploads", "Uploads", url_or_blank("dashboard:uploads", slug=slug)),
        ("settings", "Settings", url_or_blank("dashboard:project_settings", slug=slug)),
    ]
    return [link for link in links if link[2]]


def _relation_to(candidate: type[Model], target: type[Model]) -> str | None:
    """Name of candidate's foreign key (or one-to-one) to target, if it has one."""
    for field in candidate._meta.get_fields():
        is_key = getattr(field, "many_to_one", False) or getattr(field, "one_to_one", False)
        if is_key and field.related_model is target and getattr(field, "concrete", False):
            return field.name
    return None


def attribution_source() -> tuple[type[Model], str] | None:
    """The attribution app's per-trajectory model with ``lo``/``hi``, and its key to it."""
    from ingest.models import Trajectory

    if not apps.is_installed("attribution"):
        return None
    for candidate in apps.get_app_config("attribution").get_models():
        names = {f.name for f in candidate._meta.get_fields()}
        link = _relation_to(candidate, Trajectory)
        if link and {"lo", "hi"} <= names:
            return candidate, link
    return None


def misbehaviour_source() -> tuple[type[Model], type[Model], str, str] | None:
    """(Misbehaviour model, membership model, membership's key to it, path to trajectory)."""
    from ingest.models import Step, Trajectory

    if not apps.is_installed("analysis"):
        return None
    misbehaviour = model("analysis", "Misbehaviour")
    if misbehaviour is None:
        return None
    for candidate in apps.get_app_config("analysis").get_models():
        link = _relation_to(candidate, misbehaviour)
        if not link or candidate is misbehaviour:
            continue
        step_link = _relation_to(candidate, Step)
        if step_link:
            return misbehaviour, candidate, link, f"{step_link}__trajectory"
        trajectory_link = _relation_to(candidate, Trajectory)
        if trajectory_link:
            return misbehaviour, candidate, link, trajectory_link
    return None


def misbehaviour_choices(project: Any) -> list[tuple[int, str]]:
    """(id, name) of the project's misbehaviours for the rollouts filter, largest first."""
    active = peer_function("analysis.selectors", "active_misbehaviours")
    if active is not None:
        return [(row.pk, str(row)) for row in active(project)[:300]]
    source = misbehaviour_source()
    if source is None:
        return []
    misbehaviour = source[0]
    if not _relation_to(misbehaviour, type(project)):
        return []
    rows = misbehaviour.objects.filter(**{_relation_to(misbehaviour, type(project)): project})
    return [(row.pk, str(getattr(row, "name", "") or row)) for row in rows[:300]]
