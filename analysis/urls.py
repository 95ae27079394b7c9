from django.urls import path

from analysis import views

app_name = "analysis"

# Mounted at /p/<slug>/misbehaviours/ (see faultline/urls.py); every view takes ``slug``.
urlpatterns = [
    path("", views.misbehaviour_list, name="misbehaviour_list"),
    path("map/", views.misbehaviour_map, name="misbehaviour_map"),
    path("taxonomy/", views.taxonomy, name="taxonomy"),
    path("taxonomy/new", views.category_create, name="category_create"),
    path("refresh", views.refresh, name="refresh"),
    path("status", views.run_status, name="run_status"),
    path("<int:pk>/", views.misbehaviour_detail, name="misbehaviour_detail"),
    path("<int:pk>/rename", views.misbehaviour_rename, name="misbehaviour_rename"),
    path("<int:pk>/merge", views.misbehaviour_merge, name="misbehaviour_merge"),
    path("<int:pk>/category", views.misbehaviour_categorise, name="misbehaviour_categorise"),
    path("<int:pk>/confirm", views.misbehaviour_confirm, name="misbehaviour_confirm"),
]
