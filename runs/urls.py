"""Signed file downloads (spec §5)."""

from django.urls import path

from . import views

urlpatterns = [
    path("files/<str:public_id>", views.download, name="file-download"),
]
