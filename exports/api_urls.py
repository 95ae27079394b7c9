"""Export API, mounted at api/v1/projects/<slug:slug>/exports/ (every view takes ``slug``)."""

from django.urls import path

from exports import api

app_name = "exports_api"

urlpatterns = [
    path("", api.exports_view, name="list"),
    path("<int:pk>", api.export_status_view, name="status"),
    path("<int:pk>/files/<str:name>", api.export_file_view, name="file"),
    path("<int:pk>/export.zip", api.export_zip_view, name="zip"),
]
