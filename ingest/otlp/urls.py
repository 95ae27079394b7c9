"""The OTLP/HTTP endpoints: the specification's default path and the same under the API."""

from __future__ import annotations

from django.urls import path

from ingest.otlp import views

urlpatterns = [
    path("v1/traces", views.otlp_traces_view, name="otlp_traces"),
    path("api/v1/otlp/v1/traces", views.otlp_traces_view, name="api_otlp_traces"),
]
