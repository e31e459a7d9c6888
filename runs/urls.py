from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import api, views

urlpatterns = [
    path("api/tools/<str:tool>", api.ToolView.as_view(), name="tool"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("files/<str:public_id>", views.download, name="file-download"),
]
