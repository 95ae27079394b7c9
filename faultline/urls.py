from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="dashboard/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("p/<slug:slug>/attribution/", include("attribution.urls")),
    path("p/<slug:slug>/misbehaviours/", include("analysis.urls")),
    path("", include("dashboard.urls")),
]
