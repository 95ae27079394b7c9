"""URL patterns of the REST API, mounted at api/v1/ by faultline/urls.py.

The Swagger UI files come first (a plain view), then ninja's routes. A few routes keep the
URL names they had before the API moved to ninja (``reverse("api_upload_create", ...)``),
pointing at the same ninja view.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from dashboard.api.docs import ASSET_URL_NAME, docs_asset
from dashboard.api.main import api

# Old URL name -> ninja's url_name of the same route.
LEGACY_NAMES = {
    "api_upload_create": "upload_create",
    "api_upload_status": "upload_status",
    "api_rollouts_export": "rollout_download",
}


def _legacy_aliases() -> list[URLPattern]:
    patterns: list[URLPattern] = api.urls[0]  # type: ignore[assignment]
    by_name = {p.name: p for p in patterns if isinstance(p, URLPattern) and p.name}
    return [
        path(str(by_name[new].pattern), by_name[new].callback, name=old)
        for old, new in LEGACY_NAMES.items()
    ]


def api_urlpatterns() -> list[URLPattern | URLResolver]:
    """What faultline/urls.py includes under ``api/v1/``."""
    return [
        path("docs/assets/<str:name>", docs_asset, name=ASSET_URL_NAME),
        *_legacy_aliases(),
        path("", api.urls),
    ]
