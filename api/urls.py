"""The agents' doors: the tools over REST with their OpenAPI document, and MCP at `/mcp` (and `/mcp/`)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.oauth import MCP_PATH

from . import mcp, rest

# The routes of the calls themselves, which the site's URLs put first of all at their top level
# (config.urls): most requests are calls, and a route inside an include is resolved through one more
# resolver, with a match made for each.
calls = [
    path("api/tools/<str:tool>", rest.ToolView.as_view(), name="tool"),
    path(MCP_PATH.lstrip("/"), mcp.endpoint, name="mcp"),
    path(MCP_PATH.lstrip("/") + "/", mcp.endpoint),
]

urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
