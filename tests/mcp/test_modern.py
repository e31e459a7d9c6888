"""MCP 2026-07-28 at /mcp: stateless requests, `server/discover`, routing headers checked against the body.

The revision's transport and lifecycle pages (basic/transports, basic/lifecycle) and the official SDK's
inbound ladder (`mcp.shared.inbound.classify_inbound_request`) are what these hold the endpoint to.
"""

import base64

import pytest
from mcp.shared.inbound import classify_inbound_request

from accounts.oauth import create_agent
from api.mcp_tools import INSTRUCTIONS
from processes.capabilities import TOOLS
from tests.mcp import SCREENING, McpClient, client_credentials_token, rid
from tests.runs.conftest import publish_text

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


class ModernClient(McpClient):
    """Send 2026-07-28 requests: `_meta` in the params, the routing headers beside them."""

    def call(self, method: str, params: dict | None = None, *, meta=META, headers: dict | None = None, **extra):
        params = dict(params or {})
        if meta is not None:
            params["_meta"] = meta
        routing = {"HTTP_MCP_PROTOCOL_VERSION": MODERN, "HTTP_MCP_METHOD": method}
        if method == "tools/call" and "name" in params:
            routing["HTTP_MCP_NAME"] = params["name"]
        routing.update(headers or {})
        return self.request(method, params, **{key: value for key, value in routing.items() if value is not None})

    def result(self, method: str, params: dict | None = None) -> dict:
        response = self.call(method, params)
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["id"] == self.ids and "result" in body, body
        return body["result"]


@pytest.fixture
def modern(client, org):
    publish_text(org, SCREENING)
    _agent, client_id, secret = create_agent(organization=org, name="modern-agent")
    return ModernClient(client, client_credentials_token(client, client_id, secret))


def error_of(response, status: int, code: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code, body
    return body["error"]


def test_discover_names_the_versions_capabilities_and_instructions(modern):
    result = modern.result("server/discover")
    assert result["supportedVersions"] == ["2025-06-18", "2025-11-25", MODERN]
    assert result["capabilities"] == {"tools": {}}
    assert result["instructions"] == INSTRUCTIONS
    # Cacheable results say for how long and for whom; every result says it is complete and who answered.
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "agentprocess-server"


def test_the_results_fit_the_revision_s_own_schema(modern):
    from mcp_types import methods

    for method, params in [
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "describe", "arguments": {}}),
    ]:
        result = modern.result(method, params)
        methods.serialize_server_result(method, MODERN, result)  # raises when the result does not fit


def test_a_tool_call_works_a_run_without_any_handshake(modern):
    started = modern.result(
        "tools/call",
        {"name": "start_run", "arguments": {"process": "screening", "inputs": {"vendor": "Acme"}, "requestId": rid()}},
    )
    assert started["isError"] is False and started["structuredContent"]["ok"] is True
    assert started["resultType"] == "complete"
    listed = modern.result("tools/list")
    assert {tool["name"] for tool in listed["tools"]} == set(TOOLS)
    assert listed["ttlMs"] > 0 and listed["cacheScope"] == "public"
    refused = modern.result("tools/call", {"name": "claim", "arguments": {"runId": "r_0", "stepId": "x", "requestId": rid()}})
    # A tool's own refusal stays a tool result (200, isError), as in the handshake revisions.
    assert refused["isError"] is True and refused["structuredContent"]["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("meta", "missing"),
    [
        (None, "params._meta"),
        ({"io.modelcontextprotocol/clientCapabilities": {}}, "io.modelcontextprotocol/protocolVersion"),
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, "io.modelcontextprotocol/clientCapabilities"),
    ],
)
def test_a_request_without_its_envelope_is_invalid_params(modern, meta, missing):
    error = error_of(modern.call("tools/list", meta=meta), 400, -32602)
    assert missing in error["message"]


@pytest.mark.parametrize(
    ("method", "params", "headers", "named"),
    [
        ("tools/list", {}, {"HTTP_MCP_METHOD": "tools/call"}, "Mcp-Method"),
        ("tools/list", {}, {"HTTP_MCP_METHOD": None}, "Mcp-Method"),
        ("tools/call", {"name": "describe", "arguments": {}}, {"HTTP_MCP_NAME": "get_run"}, "Mcp-Name"),
        ("tools/call", {"name": "describe", "arguments": {}}, {"HTTP_MCP_NAME": None}, "Mcp-Name"),
        # Two copies of a header reach WSGI joined by a comma: never equal to the body's value.
        ("tools/list", {}, {"HTTP_MCP_METHOD": "tools/list, tools/list"}, "Mcp-Method"),
    ],
)
def test_routing_headers_must_match_the_body(modern, method, params, headers, named):
    error = error_of(modern.call(method, params, headers=headers), 400, -32020)
    assert named in error["message"]


def test_the_envelope_version_must_match_the_header(modern):
    # The header routes the request (a handshake revision's header means the handshake era); at
    # 2026-07-28 the envelope must then say the same.
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    error = error_of(modern.call("tools/list", meta=meta), 400, -32020)
    assert "MCP-Protocol-Version" in error["message"]


def test_our_answers_agree_with_the_sdk_s_own_ladder(modern):
    # The SDK's server-side classifier and ours reach the same verdict on the same requests.
    cases = [
        ({"_meta": META}, {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}, 200),
        ({}, {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}, -32602),
        ({"_meta": META}, {"mcp-protocol-version": MODERN, "mcp-method": "ping"}, -32020),
    ]
    for params, headers, expected in cases:
        verdict = classify_inbound_request({"method": "tools/list", "params": params}, headers=headers)
        sdk = getattr(verdict, "code", 200)
        response = modern.request(
            "tools/list", params, **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()}
        )
        ours = response.json().get("error", {}).get("code", 200)
        assert sdk == ours == expected


def test_a_name_too_odd_for_a_header_travels_base64(modern):
    encoded = "=?base64?" + base64.b64encode(b"describe").decode() + "?="
    response = modern.call("tools/call", {"name": "describe", "arguments": {}}, headers={"HTTP_MCP_NAME": encoded})
    assert response.status_code == 200 and response.json()["result"]["structuredContent"]["ok"] is True
    broken = modern.call("tools/call", {"name": "describe", "arguments": {}}, headers={"HTTP_MCP_NAME": "=?base64?!!?="})
    error_of(broken, 400, -32020)


@pytest.mark.parametrize("method", ["initialize", "ping", "resources/list", "no/such"])
def test_methods_this_revision_does_not_have_are_404(modern, method):
    error = error_of(modern.call(method), 404, -32601)
    assert method in error["message"]


def test_an_unknown_tool_is_400_invalid_params(modern):
    error_of(modern.call("tools/call", {"name": "delete_everything", "arguments": {}}), 400, -32602)


def test_an_unspoken_version_is_400_naming_every_version_spoken(modern):
    response = modern.call("tools/list", headers={"HTTP_MCP_PROTOCOL_VERSION": "2027-01-01"})
    error = error_of(response, 400, -32022)
    assert error["data"] == {"supported": ["2025-06-18", "2025-11-25", MODERN], "requested": "2027-01-01"}


def test_notifications_are_accepted_and_posted_responses_refused(modern):
    note = modern.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        HTTP_MCP_PROTOCOL_VERSION=MODERN,
    )
    assert note.status_code == 202 and note.content == b""
    answer = modern.post({"jsonrpc": "2.0", "id": 1, "result": {}}, HTTP_MCP_PROTOCOL_VERSION=MODERN)
    error_of(answer, 400, -32600)
    batch = modern.post([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], HTTP_MCP_PROTOCOL_VERSION=MODERN)
    error_of(batch, 400, -32600)


def test_get_and_delete_are_405_and_a_session_id_is_ignored(modern, client):
    for method in (client.get, client.delete):
        response = method("/mcp", HTTP_AUTHORIZATION=f"Bearer {modern.token}", HTTP_MCP_PROTOCOL_VERSION=MODERN)
        assert response.status_code == 405 and response["Allow"] == "POST"
    response = modern.call("tools/list", headers={"HTTP_MCP_SESSION_ID": "made-up-session"})
    assert response.status_code == 200 and "Mcp-Session-Id" not in response


def test_the_handshake_revisions_still_answer_beside_it(modern):
    legacy = modern.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}})
    assert legacy.status_code == 200 and legacy.json()["result"]["protocolVersion"] == "2025-11-25"
    assert "resultType" not in legacy.json()["result"]
    assert modern.request("ping", HTTP_MCP_PROTOCOL_VERSION="2025-11-25").json()["result"] == {}
