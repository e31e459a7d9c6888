"""The agents' doors: the tools over REST with their OpenAPI document, and MCP at `/mcp` (and `/mcp/`)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.oauth import MCP_PATH

from . import mcp, rest

urlpatterns = [
    path("api/tools/<str:tool>", rest.ToolView.as_view(), name="tool"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path(MCP_PATH.lstrip("/"), mcp.endpoint, name="mcp"),
    path(MCP_PATH.lstrip("/") + "/", mcp.endpoint),
]
