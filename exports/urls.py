"""Export pages, mounted at p/<slug:slug>/exports/ (every view takes ``slug``)."""

from django.urls import path

from exports import views

app_name = "exports"

urlpatterns = [
    path("", views.exports_page, name="index"),
    path("<int:pk>/status", views.export_status, name="status"),
    path("<int:pk>/retry", views.export_retry_view, name="retry"),
    path("<int:pk>/files/<str:name>", views.export_file, name="file"),
    path("<int:pk>/export.zip", views.export_zip, name="zip"),
    path("rollouts/<int:pk>/correction", views.correction_save_view, name="correction_save"),
    path(
        "rollouts/<int:pk>/correction/<int:correction_pk>/delete",
        views.correction_delete_view,
        name="correction_delete",
    ),
]
