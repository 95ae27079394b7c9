from django.urls import path  # noqa: F401

app_name = "analysis"

# Pages of this app live under /p/<slug>/analysis/ (see faultline/urls.py).
urlpatterns: list = []
