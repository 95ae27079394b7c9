"""The project's URLs plus the OTLP receiver's, until faultline/urls.py includes them."""

from __future__ import annotations

from django.urls import include, path

from faultline.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("", include("ingest.otlp.urls")), *project_urlpatterns]
