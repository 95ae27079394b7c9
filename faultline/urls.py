from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import api, otlp

urlpatterns = [
    # OTLP/HTTP: the specification's default path, and the same under the API.
    path("v1/traces", otlp.otlp_traces_view, name="otlp_traces"),
    path("api/v1/otlp/v1/traces", otlp.otlp_traces_view, name="api_otlp_traces"),
    path(
        "login/", auth_views.LoginView.as_view(template_name="dashboard/login.html"), name="login"
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/projects/<slug:slug>/uploads", api.upload_create_view, name="api_upload_create"),
    path(
        "api/v1/projects/<slug:slug>/uploads/<int:pk>",
        api.upload_status_view,
        name="api_upload_status",
    ),
    path(
        "api/v1/projects/<slug:slug>/rollouts.jsonl",
        api.rollouts_export_view,
        name="api_rollouts_export",
    ),
    path("api/v1/projects/<slug:slug>/exports/", include("exports.api_urls")),
    path("p/<slug:slug>/attribution/", include("attribution.urls")),
    path("p/<slug:slug>/exports/", include("exports.urls")),
    path("p/<slug:slug>/misbehaviours/", include("analysis.urls")),
    path("", include("dashboard.urls")),
]
