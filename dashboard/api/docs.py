"""The browsable API docs at /api/v1/docs: Swagger UI, offline and under the site's CSP.

ninja's stock page loads Swagger UI from a CDN unless ``ninja`` is an installed app, and
even then relies on the static-files set-up. Here the page is built in Python and points
at Swagger UI's files as ninja ships them (``ninja/static/ninja``), served by one small
view that answers only those names: no CDN, no inline script or style (the settings travel
in a JSON data block, which a browser never executes; ninja's own swagger-ui-init.js reads
them), so the default ``script-src 'self'`` policy holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ninja
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from ninja.openapi.docs import DocsBase

from projects.security import API_DOCS_ASSET_URL_NAME

if TYPE_CHECKING:
    from ninja import NinjaAPI

ASSET_DIR = Path(ninja.__file__).resolve().parent / "static" / "ninja"
ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui.css.map": "application/json",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-bundle.js.map": "application/json",
    "swagger-ui-init.js": "text/javascript",
    "favicon.png": "image/png",
}
ASSET_URL_NAME = API_DOCS_ASSET_URL_NAME
# The files change only with the pinned ninja version.
ASSET_MAX_AGE = 24 * 3600
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{css}">
<link rel="icon" type="image/png" href="{icon}">
</head>
<body>
<script type="application/json" id="swagger-settings">{settings}</script>
<div id="swagger-ui"></div>
<script src="{bundle}"></script>
<script src="{init}"></script>
</body>
</html>
"""


def asset_url(name: str) -> str:
    return reverse(ASSET_URL_NAME, kwargs={"name": name})


def settings_json(settings: dict[str, Any]) -> str:
    """Swagger UI's settings as a JSON data block that no value can close early.

    Example:
        >>> settings_json({"url": "</script>"})
        '{"url": "\\\\u003c/script>"}'
    """
    return json.dumps(settings).replace("<", "\\u003c")


class OfflineSwagger(DocsBase):
    """Swagger UI from the files ninja ships, served by :func:`docs_asset`."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.settings = {"layout": "BaseLayout", "deepLinking": True, **(settings or {})}

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        settings = {**self.settings, "url": self.get_openapi_url(api, kwargs)}
        page = format_html(
            PAGE,
            title=api.title,
            css=asset_url("swagger-ui.css"),
            icon=asset_url("favicon.png"),
            # Already safe inside <script>: no "<" is left to close it (settings_json).
            settings=mark_safe(settings_json(settings)),  # noqa: S308
            bundle=asset_url("swagger-ui-bundle.js"),
            init=asset_url("swagger-ui-init.js"),
        )
        return HttpResponse(page)


@require_GET
def docs_asset(request: HttpRequest, name: str) -> FileResponse:
    """One of Swagger UI's files; only the names above (the URL never reaches the disk)."""
    content_type = ASSETS.get(name)
    if content_type is None:
        raise Http404("No such file.")
    response = FileResponse((ASSET_DIR / name).open("rb"), content_type=content_type)
    response["Cache-Control"] = f"public, max-age={ASSET_MAX_AGE}"
    return response
