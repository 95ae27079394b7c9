from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.project_list, name="project_list"),
]
