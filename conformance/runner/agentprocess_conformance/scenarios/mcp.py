"""MCP: the tools are MCP tools over Streamable HTTP with OAuth 2.1 bearer tokens (spec §4)."""

from __future__ import annotations

from .. import exchanges
from ..calls import Caller
from ..framework import Skip, section
from ..oauth import parse_challenge
from ..transport import HANDSHAKE_VERSIONS, STATELESS_VERSIONS, McpSession, TransportError

REQUIRED_TOOLS = ("describe", "list_processes", "start_run", "get_run", "get_work", "claim", "submit", "escalate",
                  "decide", "cancel")


@section("mcp", "MCP transport", "spec §4", [
    ("mcp.unauthenticated", "a request without a token is 401 with a Bearer challenge naming the resource metadata",
     "spec §4; MCP authorization; RFC 9728 §5.1"),
    ("mcp.discovery", "the protected-resource metadata names an authorization server with a token endpoint",
     "RFC 9728 §3; RFC 8414 §3"),
    ("mcp.initialize", "initialize (2025-11-25) answers a protocol version the client speaks and the tools capability",
     "spec §4; MCP 2025-11-25 lifecycle"),
    ("mcp.tools_list", "tools/list after the handshake lists every required tool, each with an object input schema",
     "spec §4.1; MCP tools"),
    ("mcp.tools_call", "a tools/call after the handshake answers the envelope", "spec §4; MCP tools"),
    ("mcp.discover", "server/discover (2026-07-28) names 2026-07-28 among the versions and the tools capability",
     "spec §4; MCP 2026-07-28"),
    ("mcp.stateless_tools", "stateless tools/list and tools/call (2026-07-28) answer complete results with every "
     "required tool and the envelope", "spec §4.1; MCP 2026-07-28"),
    ("mcp.stateless_headers", "a 2026-07-28 request whose Mcp-Method header disagrees with its method is refused "
     "with HTTP 400", "MCP 2026-07-28"),
])
def mcp(context, rec):
    config = context.config
    with rec.check("mcp.unauthenticated"):
        answer = exchanges.session().post(config.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                          headers={"Accept": "application/json, text/event-stream"}, timeout=30)
        assert answer.status_code == 401, f"answered {answer.status_code}, not 401"
        challenge = answer.headers.get("WWW-Authenticate", "")
        assert challenge.lower().startswith("bearer"), f"WWW-Authenticate is {challenge!r}"
        assert parse_challenge(challenge).get("resource_metadata"), f"no resource_metadata in {challenge!r}"
    with rec.check("mcp.discovery"):
        if context.discovery is None:
            raise AssertionError(context.discovery_problem or "no discovery was made")
        assert context.discovery.token_endpoint.startswith(("https://", "http://"))
    credential = config.home.agents[0]
    handshake = McpSession(config.mcp_url, credential, context.discovery, protocol_version=HANDSHAKE_VERSIONS[0],
                           http=exchanges.session())
    context.sessions.append(handshake)
    with rec.check("mcp.initialize"):
        handshake.open()
        result = handshake.facts.initialize or {}
        assert result.get("protocolVersion") in HANDSHAKE_VERSIONS, result.get("protocolVersion")
        assert isinstance((result.get("capabilities") or {}).get("tools"), dict), "capabilities.tools is missing"
        assert isinstance(result.get("serverInfo"), dict), "serverInfo is missing"
    with rec.check("mcp.tools_list"):
        required_tools(handshake.list_tools())
    with rec.check("mcp.tools_call"):
        caller = Caller(f"agent 1 (MCP {HANDSHAKE_VERSIONS[0]})", handshake, context.schemas, context.ledger, kind="agent")
        assert isinstance(caller.ok("describe"), dict) and caller.ok("list_processes")["items"] is not None
    stateless = McpSession(config.mcp_url, credential, context.discovery, protocol_version=STATELESS_VERSIONS[0],
                           http=exchanges.session())
    context.sessions.append(stateless)
    with rec.check("mcp.discover"):
        try:
            stateless.open()
        except TransportError as exc:
            if "-32022" in str(exc) or "Unsupported protocol version" in str(exc):
                raise Skip(f"the server does not speak MCP {STATELESS_VERSIONS[0]}: {exc}") from None
            raise
        found = stateless.facts.discover or {}
        assert STATELESS_VERSIONS[0] in (found.get("supportedVersions") or []), found.get("supportedVersions")
        assert isinstance((found.get("capabilities") or {}).get("tools"), dict), "capabilities.tools is missing"
    with rec.check("mcp.stateless_tools"):
        if stateless.negotiated is None:
            raise Skip(f"the server does not speak MCP {STATELESS_VERSIONS[0]}")
        required_tools(stateless.list_tools())
        caller = Caller(f"agent 1 (MCP {STATELESS_VERSIONS[0]})", stateless, context.schemas, context.ledger,
                        kind="agent")
        assert isinstance(caller.ok("describe"), dict) and caller.ok("list_processes")["items"] is not None
        kinds = stateless.facts.result_types
        assert kinds and set(kinds) == {"complete"}, f"resultType of the results: {kinds}"
    with rec.check("mcp.stateless_headers"):
        if stateless.negotiated is None:
            raise Skip(f"the server does not speak MCP {STATELESS_VERSIONS[0]}")
        message = {"jsonrpc": "2.0", "id": 99, "method": "tools/list",
                   "params": stateless.stamped({})}
        headers = {**stateless.headers(message), "Mcp-Method": "tools/call"}
        answer = stateless.http.post(config.mcp_url, json=message, headers=headers, timeout=30)
        assert answer.status_code == 400, f"answered HTTP {answer.status_code}, not 400"


def required_tools(tools: list) -> None:
    names = [tool.get("name") for tool in tools]
    missing = [name for name in REQUIRED_TOOLS if name not in names]
    assert not missing, f"tools/list lacks {', '.join(missing)}"
    shapeless = [tool.get("name") for tool in tools if (tool.get("inputSchema") or {}).get("type") != "object"]
    assert not shapeless, f"no object inputSchema: {', '.join(map(str, shapeless))}"
