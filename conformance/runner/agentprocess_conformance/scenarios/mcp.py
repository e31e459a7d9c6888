"""MCP: the tools are MCP tools over Streamable HTTP with OAuth 2.1 bearer tokens (spec §4)."""

from __future__ import annotations

import requests

from ..framework import section
from ..oauth import parse_challenge
from ..transport import HANDSHAKE_VERSIONS

REQUIRED_TOOLS = ("describe", "list_processes", "start_run", "get_run", "get_work", "claim", "submit", "escalate",
                  "decide", "cancel")


@section("mcp", "MCP transport", "spec §4", [
    ("mcp.unauthenticated", "a request without a token is 401 with a Bearer challenge naming the resource metadata",
     "spec §4; MCP authorization; RFC 9728 §5.1"),
    ("mcp.discovery", "the protected-resource metadata names an authorization server with a token endpoint",
     "RFC 9728 §3; RFC 8414 §3"),
    ("mcp.initialize", "initialize answers a protocol version the client speaks and the tools capability",
     "spec §4; MCP lifecycle"),
    ("mcp.tools_list", "tools/list lists every required tool, each with an object input schema",
     "spec §4.1; MCP tools"),
])
def mcp(context, rec):
    config = context.config
    with rec.check("mcp.unauthenticated"):
        answer = requests.post(config.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                               headers={"Accept": "application/json, text/event-stream"}, timeout=30)
        assert answer.status_code == 401, f"answered {answer.status_code}, not 401"
        challenge = answer.headers.get("WWW-Authenticate", "")
        assert challenge.lower().startswith("bearer"), f"WWW-Authenticate is {challenge!r}"
        assert parse_challenge(challenge).get("resource_metadata"), f"no resource_metadata in {challenge!r}"
    with rec.check("mcp.discovery"):
        if context.discovery is None:
            raise AssertionError(context.discovery_problem or "no discovery was made")
        assert context.discovery.token_endpoint.startswith(("https://", "http://"))
    session = context.sessions[0]
    session.open()
    with rec.check("mcp.initialize"):
        result = session.facts.initialize or {}
        assert result.get("protocolVersion") in HANDSHAKE_VERSIONS, result.get("protocolVersion")
        assert isinstance((result.get("capabilities") or {}).get("tools"), dict), "capabilities.tools is missing"
        assert isinstance(result.get("serverInfo"), dict), "serverInfo is missing"
    with rec.check("mcp.tools_list"):
        tools = session.list_tools()
        names = [tool.get("name") for tool in tools]
        missing = [name for name in REQUIRED_TOOLS if name not in names]
        assert not missing, f"tools/list lacks {', '.join(missing)}"
        shapeless = [tool.get("name") for tool in tools if (tool.get("inputSchema") or {}).get("type") != "object"]
        assert not shapeless, f"no object inputSchema: {', '.join(map(str, shapeless))}"
