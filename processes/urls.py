from django.urls import path

from . import views

urlpatterns = [
    path("processes/", views.catalogue, name="processes"),
    path("processes/<str:name>/", views.start, name="process-start"),
]
