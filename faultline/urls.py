from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy

from dashboard import docs_pages, otlp
from dashboard.api.urls import api_urlpatterns

urlpatterns = [
    # OTLP/HTTP: the specification's default path, and the same under the API.
    path("v1/traces", otlp.otlp_traces_view, name="otlp_traces"),
    path("api/v1/otlp/v1/traces", otlp.otlp_traces_view, name="api_otlp_traces"),
    path(
        "login/", auth_views.LoginView.as_view(template_name="dashboard/login.html"), name="login"
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # A user changes their own password (accounts are made with manage.py user_add).
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="dashboard/password_change.html",
            success_url=reverse_lazy("password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name="dashboard/password_change_done.html"
        ),
        name="password_change_done",
    ),
    # The product's documentation (the pages name its files).
    path("docs/", docs_pages.doc_page, name="doc_index"),
    path("docs/<slug:name>/", docs_pages.doc_page, name="doc_page"),
    # The REST API v1 (django-ninja): every /api/v1/ route but OTLP, docs at /api/v1/docs.
    path("api/v1/", include(api_urlpatterns())),
    path("p/<slug:slug>/attribution/", include("attribution.urls")),
    path("p/<slug:slug>/exports/", include("exports.urls")),
    path("p/<slug:slug>/misbehaviours/", include("analysis.urls")),
    path("", include("dashboard.urls")),
]
