from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.project_list, name="project_list"),
    path("p/<slug:slug>/", views.project_detail, name="project_detail"),
    path("p/<slug:slug>/rollouts/", views.rollout_list, name="rollout_list"),
    path("p/<slug:slug>/rollouts/<int:pk>/", views.rollout_detail, name="rollout_detail"),
    path("p/<slug:slug>/rollouts/<int:pk>/outcome", views.rollout_outcome, name="rollout_outcome"),
    path("p/<slug:slug>/rollouts/<int:pk>/compare/", views.rollout_compare, name="rollout_compare"),
    path("p/<slug:slug>/rollouts.jsonl", views.rollouts_download, name="rollouts_download"),
    path(
        "p/<slug:slug>/rollouts/<int:pk>/download", views.rollout_download, name="rollout_download"
    ),
    path("p/<slug:slug>/uploads/", views.uploads, name="uploads"),
    path("p/<slug:slug>/uploads/<int:pk>/status", views.upload_status, name="upload_status"),
    path("p/<slug:slug>/uploads/<int:pk>/retry", views.upload_retry, name="upload_retry"),
    path("p/<slug:slug>/refresh/retry", views.refresh_retry, name="refresh_retry"),
    path("p/<slug:slug>/settings/", views.project_settings, name="project_settings"),
]
