from django.urls import path  # noqa: F401

app_name = "attribution"

# Pages of this app live under /p/<slug>/attribution/ (see faultline/urls.py).
urlpatterns: list = []
