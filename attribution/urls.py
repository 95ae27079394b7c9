from django.urls import path

from attribution import views

app_name = "attribution"

# Pages of this app live under /p/<slug>/attribution/ (see faultline/urls.py).
urlpatterns = [
    path("calibration/", views.calibration, name="calibration"),
    path("calibration/settings/", views.calibration_settings, name="calibration_settings"),
    path("labelling/", views.labelling_queue, name="labelling_queue"),
    path("rollouts/<int:pk>/panel/", views.rollout_panel, name="rollout_panel"),
    path("rollouts/<int:pk>/label/", views.label_add, name="label_add"),
    path(
        "rollouts/<int:pk>/labels/<int:label_pk>/delete/",
        views.label_delete,
        name="label_delete",
    ),
]
