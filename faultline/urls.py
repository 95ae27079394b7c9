from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import api

urlpatterns = [
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
