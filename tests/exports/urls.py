"""The project's URLs with the export pages and API mounted, whether or not
faultline/urls.py mounts them yet (tests use it through @pytest.mark.urls)."""

from django.urls import include, path

from faultline.urls import urlpatterns as root_patterns


def _mounted(namespace: str) -> bool:
    return any(getattr(pattern, "namespace", None) == namespace for pattern in root_patterns)


urlpatterns = list(root_patterns)
if not _mounted("exports_api"):
    urlpatterns.insert(0, path("api/v1/projects/<slug:slug>/exports/", include("exports.api_urls")))
if not _mounted("exports"):
    urlpatterns.insert(0, path("p/<slug:slug>/exports/", include("exports.urls")))
