"""The calls' routes come first, at the top level of the site's URLs (config/urls.py)."""

from django.urls import get_resolver, resolve, reverse

from accounts.oauth import MCP_PATH


def test_a_call_is_routed_by_the_first_patterns_at_the_top_level():
    # Most requests are tool calls and MCP messages. Django tries the patterns in order, and a route
    # inside an include goes through one more resolver: theirs come first, at the top level.
    routes = ["api/tools/<str:tool>", MCP_PATH.lstrip("/"), MCP_PATH.lstrip("/") + "/"]
    assert [str(pattern.pattern) for pattern in get_resolver().url_patterns[:3]] == routes
    for url, route in zip(["/api/tools/claim", MCP_PATH, MCP_PATH + "/"], routes, strict=True):
        assert resolve(url).route == route
    assert reverse("tool", kwargs={"tool": "claim"}) == "/api/tools/claim" and reverse("mcp") == MCP_PATH
    assert reverse("api-schema") == "/api/schema/" and resolve("/api/docs/").url_name == "api-docs"
