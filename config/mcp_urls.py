"""The MCP endpoint at the site root: `/mcp`, and `/mcp/` for clients that add the slash."""

from django.urls import path

from accounts.oauth import MCP_PATH
from runs import mcp

urlpatterns = [
    path(MCP_PATH.lstrip("/"), mcp.endpoint, name="mcp"),
    path(MCP_PATH.lstrip("/") + "/", mcp.endpoint),
]
