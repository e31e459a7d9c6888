"""The /mcp endpoint over raw HTTP: Streamable HTTP framing, JSON-RPC, the tools, and OAuth (issue 5)."""

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.db import OperationalError
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from accounts.oauth import create_agent
from api.mcp_tools import PROPERTY_DESCRIPTIONS
from processes.capabilities import TOOLS
from runs.arguments import WRITE_TOOLS, argument_schema
from tests.mcp import (
    APPROVAL,
    MCP_VERSIONS,
    SCREENING,
    McpClient,
    RestClient,
    client_credentials_token,
    person_token,
    rid,
)

OFFICIAL_TOOLS = (
    Path(__file__).resolve().parents[3] / "shared" / "agentprocess" / "schemas" / "core-2" / "tools"
)
METADATA_URL = "http://testserver/.well-known/oauth-protected-resource/mcp"
CHALLENGE = re.compile(r"^Bearer (?P<params>.+)$")


@pytest.fixture
def agent_credentials(org):
    _agent, client_id, secret = create_agent(organization=org, name="mcp-agent")
    return client_id, secret


@pytest.fixture
def token(client, agent_credentials):
    return client_credentials_token(client, *agent_credentials)


@pytest.fixture
def mcp(client, token):
    return McpClient(client, token)


def challenge_params(header: str) -> dict:
    match = CHALLENGE.match(header)
    assert match, header
    return dict(re.findall(r'(\w+)="([^"]*)"', match["params"]))


def assert_jsonrpc_error(response, status: int, code: int, request_id=None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id
    assert body["error"]["code"] == code and body["error"]["message"]
    return body["error"]


# --- the lifecycle: initialize, ping -----------------------------------------------------------


@pytest.mark.parametrize("version", MCP_VERSIONS)
def test_initialize_answers_with_the_clients_revision_when_we_speak_it(mcp, version):
    response = mcp.request(
        "initialize",
        {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "Mcp-Session-Id" not in response
    result = response.json()["result"]
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "agentprocess-server" and result["serverInfo"]["version"]
    # The instructions teach the loop in a few lines.
    instructions = result["instructions"]
    assert len(instructions.splitlines()) <= 12
    for word in ("get_work", "claim", "renew", "upload", "submit", "escalate", "requestId"):
        assert word in instructions
    assert instructions.index("get_work") < instructions.index("claim") < instructions.index("submit")


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2099-01-01", 7, None])
def test_initialize_with_a_revision_we_do_not_speak_offers_our_latest(mcp, version):
    result = mcp.rpc("initialize", {"protocolVersion": version, "capabilities": {}})
    assert result["protocolVersion"] == "2025-11-25"


def test_ping_answers_an_empty_result(mcp):
    assert mcp.rpc("ping") == {}


def test_no_session_is_needed_any_request_may_come_first(mcp):
    # Stateless: tools/list and tools/call work without an initialize on this connection.
    assert len(mcp.rpc("tools/list")["tools"]) == 14
    assert mcp.call("describe")["ok"] is True


# --- tools/list ---------------------------------------------------------------------------------


def test_tools_list_offers_the_fourteen_tools_under_their_exact_names(mcp):
    tools = mcp.rpc("tools/list")["tools"]
    assert [tool["name"] for tool in tools] == list(TOOLS)
    assert len(tools) == 14
    for tool in tools:
        assert set(tool) >= {"name", "description", "inputSchema"}
        description = tool["description"]
        # One paragraph, long enough to act on.
        assert "\n" not in description and len(description) > 150, tool["name"]
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] not in WRITE_TOOLS)


def test_input_schemas_are_the_official_argument_schemas(mcp):
    for tool in mcp.rpc("tools/list")["tools"]:
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert "$schema" not in schema and "$id" not in schema
        Draft202012Validator.check_schema(schema)
        # Only descriptions were added, and only where the official schema has none.
        stripped = json.loads(json.dumps(schema))
        for name, prop in stripped["properties"].items():
            if name in PROPERTY_DESCRIPTIONS and prop.get("description") == PROPERTY_DESCRIPTIONS[name]:
                del prop["description"]
        vendored = {k: v for k, v in argument_schema(tool["name"]).items() if k not in ("$schema", "$id")}
        assert stripped == vendored, tool["name"]
        official = OFFICIAL_TOOLS / f"{tool['name']}.arguments.json"
        if official.exists():
            assert json.loads(official.read_text()) == argument_schema(tool["name"]), (
                "the vendored copy drifted"
            )
        if tool["name"] in WRITE_TOOLS:
            assert "requestId" in schema["required"]


# --- tools/call ---------------------------------------------------------------------------------


def test_a_tool_result_carries_the_envelope_as_structured_and_text_content(mcp):
    result = mcp.rpc("tools/call", {"name": "describe", "arguments": {}})
    assert result["isError"] is False
    assert result["structuredContent"]["ok"] is True
    assert result["structuredContent"]["data"]["version"] == "core-2"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_arguments_may_be_left_out_when_a_tool_takes_none(mcp):
    assert mcp.rpc("tools/call", {"name": "describe"})["structuredContent"]["ok"] is True


def test_a_tool_error_is_a_result_with_is_error(mcp):
    result = mcp.rpc("tools/call", {"name": "get_run", "arguments": {"runId": "r_404"}})
    assert result["isError"] is True
    assert result["structuredContent"] == {
        "ok": False,
        "error": {"code": "not_found", "message": "No run 'r_404' in this organization."},
    }
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_arguments_that_break_the_contract_are_invalid_with_every_issue(mcp):
    envelope = mcp.call("start_run", inputs="nope", colour="red")
    assert envelope["ok"] is False and envelope["error"]["code"] == "invalid"
    assert set(envelope["error"]["issues"]) >= {
        "colour: not an argument of start_run",
        "process: required",
        "requestId: required",
    }
    not_an_object = mcp.rpc("tools/call", {"name": "get_run", "arguments": ["r_1"]})
    assert not_an_object["isError"] is True
    assert not_an_object["structuredContent"]["error"]["code"] == "invalid"


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize("depth", [65, 800])
def test_arguments_nested_too_deeply_are_invalid_as_over_rest(client, token, depth):
    arguments = {"runId": "r_1", "name": "paid", "data": nested(depth), "requestId": rid()}
    envelope = McpClient(client, token).call("send_event", **arguments)
    assert envelope["ok"] is False and envelope["error"]["code"] == "invalid"
    assert RestClient(client, token).call("send_event", **arguments)["error"]["code"] == "invalid"


def test_arguments_as_deep_as_allowed_reach_the_engine(mcp):
    envelope = mcp.call("send_event", runId="r_1", name="paid", data=nested(62), requestId=rid())
    assert envelope["error"]["code"] == "not_found"


@pytest.mark.parametrize("params", [{"name": "delete_everything"}, {"name": "Describe"}, {"name": 3}, {}])
def test_an_unknown_tool_is_invalid_params(mcp, params):
    response = mcp.request("tools/call", params)
    assert_jsonrpc_error(response, 200, -32602, mcp.ids)


def test_a_database_outage_is_a_retry_result(mcp, monkeypatch):
    def unavailable(identity, tool, arguments):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("api.mcp.call_tool", unavailable)
    result = mcp.rpc("tools/call", {"name": "describe", "arguments": {}})
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "retry"


def test_file_urls_in_run_data_are_absolute(mcp, publish):
    publish(SCREENING)
    run_id = mcp.data("start_run", process="screening", inputs={"vendor": "Acme"}, requestId=rid())["run"][
        "id"
    ]
    claimed = mcp.data("claim", runId=run_id, stepId="screen", requestId=rid())
    upload = mcp.data(
        "upload", fileName="r.txt", contentType="text/plain", contentBase64="aGk=", requestId=rid()
    )
    view = mcp.data(
        "submit",
        token=claimed["token"],
        output={"cleared": False},
        summary="Hit on one list.",
        evidence=[{"kind": "file", "ref": upload["id"]}],
        next="declined",
        reason="Listed.",
        requestId=rid(),
    )
    assert view["data"]["steps"]["screen"]["evidence"][0]["url"].startswith("http://testserver/files/")


# --- JSON-RPC framing ---------------------------------------------------------------------------


def test_an_unknown_method_is_method_not_found(mcp):
    for method in ("resources/list", "prompts/list", "tools/delete", "server/discover"):
        assert_jsonrpc_error(mcp.request(method), 200, -32601, mcp.ids)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": "s-1", "error": {"code": -1, "message": "no"}},
    ],
)
def test_notifications_and_responses_get_202_and_no_body(mcp, message):
    response = mcp.post(message)
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize(
    "body",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        [{"jsonrpc": "2.0", "method": "notifications/initialized"}],
        [],
    ],
)
def test_a_batch_is_refused(mcp, body):
    error = assert_jsonrpc_error(mcp.post(body), 400, -32600)
    assert "batch" in error["message"].lower()


@pytest.mark.parametrize(
    "body",
    [
        "{bad",
        "",
        b"\xff\xfe{}",
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        "NaN",
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": Infinity}}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_a_body_that_is_not_json_is_a_parse_error(mcp, body):
    assert_jsonrpc_error(mcp.post(body), 400, -32700)


@pytest.mark.parametrize(
    "message",
    [
        3,
        "ping",
        None,
        {"id": 1, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0"},
    ],
)
def test_a_message_that_is_not_json_rpc_is_an_invalid_request(mcp, message):
    assert_jsonrpc_error(mcp.post(json.dumps(message)), 400, -32600)


@pytest.mark.parametrize("params", [[], "x", 3])
def test_params_that_are_not_an_object_are_invalid_params(mcp, params):
    response = mcp.post({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": params})
    assert_jsonrpc_error(response, 200, -32602, "a")


def test_ids_come_back_exactly(mcp):
    for request_id in ("abc", 0, -7, 2**53, "élan"):
        response = mcp.post({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        assert response.json() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


# --- HTTP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "delete", "put", "patch", "head", "options"])
@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
def test_only_post_is_allowed(client, token, method, path):
    response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_get_without_a_token_is_405_too(client, db):
    # There is no stream to open, whoever asks; a client learns that before it bothers to sign in.
    assert client.get("/mcp", HTTP_ACCEPT="text/event-stream").status_code == 405


def test_the_trailing_slash_form_is_the_same_endpoint(client, token):
    assert McpClient(client, token, path="/mcp/").rpc("ping") == {}


def test_responses_are_not_cached_and_carry_no_session(mcp):
    response = mcp.request("tools/call", {"name": "describe", "arguments": {}})
    assert "no-store" in response["Cache-Control"]
    assert "Mcp-Session-Id" not in response


@pytest.mark.parametrize("version", [None, *MCP_VERSIONS])
def test_a_supported_or_absent_protocol_version_header_is_accepted(mcp, version):
    headers = {} if version is None else {"HTTP_MCP_PROTOCOL_VERSION": version}
    response = mcp.request("ping", **headers)
    assert response.status_code == 200 and response.json()["result"] == {}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2027-01-01", "latest", ""])
def test_an_unsupported_protocol_version_header_is_400(mcp, version):
    # MCP 2026-07-28, basic/lifecycle: -32022 names the versions the server speaks, for either era.
    error = assert_jsonrpc_error(mcp.request("ping", HTTP_MCP_PROTOCOL_VERSION=version), 400, -32022)
    assert error["data"] == {"supported": [*MCP_VERSIONS, "2026-07-28"], "requested": version}


def test_the_body_must_be_json_that_we_may_answer_in_json(mcp):
    assert (
        mcp.post('{"jsonrpc": "2.0", "id": 1, "method": "ping"}', content_type="text/plain").status_code
        == 415
    )
    response = mcp.request("ping", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 406
    for accept in ("application/json", "*/*", "application/json;q=0.9, text/event-stream"):
        assert mcp.request("ping", HTTP_ACCEPT=accept).status_code == 200


def test_a_body_larger_than_the_server_accepts_is_413(mcp, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 2000}}
    assert_jsonrpc_error(mcp.post(body), 413, -32600)


# --- Origin -------------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://testserver", "HTTP://TESTSERVER", "https://testserver"])
def test_a_page_on_this_host_may_call(mcp, origin):
    assert mcp.request("ping", HTTP_ORIGIN=origin).status_code == 200


def test_public_url_and_csrf_trusted_origins_may_call(mcp, settings):
    settings.PUBLIC_URL = "https://processes.example.com"
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.org", "https://*.agents.example.net"]
    for origin in (
        "https://processes.example.com",
        "https://console.example.org",
        "https://a.agents.example.net",
    ):
        assert mcp.request("ping", HTTP_ORIGIN=origin).status_code == 200, origin


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "http://testserver.evil.example",
        "http://testserver:8080",
        "http://console.example.org",
        "https://agents.example.net.evil",
        "not a url",
        "",
    ],
)
def test_any_other_origin_is_403(mcp, settings, origin):
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.org", "https://*.agents.example.net"]
    assert_jsonrpc_error(mcp.request("ping", HTTP_ORIGIN=origin), 403, -32600)


def test_a_foreign_origin_is_refused_before_anything_else(client, db):
    # Without a token, from a rebinding page: 403, so the page cannot even learn the endpoint wants one.
    response = McpClient(client, None).request("ping", HTTP_ORIGIN="https://evil.example")
    assert response.status_code == 403
    assert "WWW-Authenticate" not in response


# --- authorization ------------------------------------------------------------------------------


def test_no_token_is_401_with_the_resource_metadata_link(client, db):
    response = McpClient(client, None).request("initialize", {"protocolVersion": "2025-11-25"})
    assert response.status_code == 401
    header = response["WWW-Authenticate"]
    assert header.startswith('Bearer resource_metadata="')
    params = challenge_params(header)
    assert params["resource_metadata"] == METADATA_URL
    assert "error" not in params
    assert response.json()["error"]["code"] == -32600


def test_the_metadata_documents_the_challenge_points_to_are_complete(client, db):
    header = McpClient(client, None).request("ping")["WWW-Authenticate"]
    url = challenge_params(header)["resource_metadata"]
    # RFC 9728 §3: the document of the resource at /mcp lives at the well-known path with /mcp appended.
    response = client.get(urlsplit(url).path)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    resource = json.loads(response.content)
    assert resource["resource"] == "http://testserver/mcp"  # §3.3: must equal the resource the client used
    assert resource["authorization_servers"] and all(
        isinstance(s, str) for s in resource["authorization_servers"]
    )
    assert resource["bearer_methods_supported"] == ["header"]
    assert "agentprocess" in resource["scopes_supported"]
    root = client.get("/.well-known/oauth-protected-resource").json()
    assert root["resource"] == "http://testserver" and root["authorization_servers"]
    for issuer in resource["authorization_servers"]:
        # RFC 8414 §3: the issuer's document is at /.well-known/oauth-authorization-server under its origin.
        assert urlsplit(issuer).path in ("", "/")
        document = client.get("/.well-known/oauth-authorization-server" + urlsplit(issuer).path.rstrip("/"))
        assert document.status_code == 200 and document["Content-Type"] == "application/json"
        server = json.loads(document.content)
        assert server["issuer"] == issuer  # §3.3: must be identical
        for field in ("authorization_endpoint", "token_endpoint"):
            assert urlsplit(server[field]).scheme in ("http", "https"), field
        assert "code" in server["response_types_supported"]
        assert {"authorization_code", "client_credentials"} <= set(server["grant_types_supported"])
        assert "S256" in server["code_challenge_methods_supported"]
        assert "agentprocess" in server["scopes_supported"]


@pytest.mark.parametrize(
    ("header", "error"),
    [
        ("Bearer nonsense", "invalid_token"),
        ("Bearer " + "x" * 86, "invalid_token"),
        ("bearer nonsense", "invalid_token"),
        ("Bearer", "invalid_request"),
        ("Bearer    ", "invalid_request"),
        # Another scheme, or none, is no bearer authentication at all: no error code (RFC 6750 §3).
        ("Basic YWdlbnQ6c2VjcmV0", None),
        ("", None),
    ],
)
def test_a_bad_token_is_401_naming_the_error(client, db, header, error):
    response = McpClient(client, None).request("ping", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    params = challenge_params(response["WWW-Authenticate"])
    assert params.get("error") == error
    assert params["resource_metadata"] == METADATA_URL


def test_an_expired_token_is_401(client, token):
    from allauth.idp.oidc.models import Token
    from django.utils import timezone

    Token.objects.update(expires_at=timezone.now())
    response = McpClient(client, token).request("ping")
    assert response.status_code == 401
    assert challenge_params(response["WWW-Authenticate"])["error"] == "invalid_token"


@pytest.mark.parametrize(
    ("resource", "accepted"),
    [
        ("http://testserver/mcp", True),
        ("http://testserver", True),
        ("https://elsewhere.example/mcp", False),
        ("http://testserver/api", False),
        ("http://testserver/mcpx", False),
    ],
)
def test_a_token_issued_for_a_resource_works_only_there(client, agent_credentials, resource, accepted):
    token = client_credentials_token(client, *agent_credentials, resource=resource)
    response = McpClient(client, token).request("ping")
    assert response.status_code == (200 if accepted else 401)
    if not accepted:
        assert challenge_params(response["WWW-Authenticate"])["error"] == "invalid_token"


def test_a_browser_session_is_not_a_credential_here(make_user):
    user = make_user("mira@example.com", groups=["finance"], operator=True)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = McpClient(browser, None).request(
        "tools/call", {"name": "describe", "arguments": {}}, HTTP_ORIGIN="http://testserver"
    )
    assert response.status_code == 401
    assert challenge_params(response["WWW-Authenticate"])["resource_metadata"] == METADATA_URL


def test_the_endpoint_needs_no_csrf_token_with_a_bearer(token):
    browser = Client(enforce_csrf_checks=True)
    assert McpClient(browser, token).rpc("ping") == {}


def test_a_person_signed_in_through_an_mcp_client_is_still_an_agent(client, publish, make_user, token):
    # spec §6 rule 4: the decision a person's own session could make is refused from their MCP client.
    publish(APPROVAL)
    person = make_user("fin@example.com", groups=["finance"], operator=True)
    agent = McpClient(client, token)
    run_id = agent.data("start_run", process="approval", inputs={"topic": "Q3"}, requestId=rid())["run"]["id"]
    claimed = agent.data("claim", runId=run_id, stepId="draft", requestId=rid())
    agent.data(
        "submit", token=claimed["token"], output={"text": "Fine."}, summary="Drafted.", requestId=rid()
    )
    as_person = McpClient(Client(), person_token(person))
    [item] = as_person.data("get_run", runId=run_id)["workItems"]
    decide = {**item["decide"]["arguments"], "requestId": rid(), "decision": "approved"}
    refused = as_person.call("decide", **decide)
    assert refused["ok"] is False and refused["error"]["code"] == "forbidden"
    cancelled = as_person.call("cancel", runId=run_id, reason="Not needed.", requestId=rid())
    assert cancelled["ok"] is False and cancelled["error"]["code"] == "forbidden"
    # The same person in their own browser session is a human, and may.
    browser = Client()
    browser.force_login(person)
    response = browser.post(
        "/api/tools/decide", json.dumps({**decide, "requestId": rid()}), content_type="application/json"
    )
    assert response.json()["ok"] is True, response.json()
    assert response.json()["data"]["run"]["state"] == "ended"


def test_rest_and_mcp_accept_the_same_token(client, token):
    assert RestClient(client, token).data("describe") == McpClient(client, token).data("describe")


# --- nothing a client sends is a 500 ------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _arguments_for(tool: str):
    names = [*sorted(argument_schema(tool)["properties"]), "extra"]
    return st.dictionaries(st.sampled_from(names), json_values, max_size=5)


@hypothesis_settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_tool_calls_with_arbitrary_arguments_are_answered_never_500(mcp, data):
    tool = data.draw(st.sampled_from(TOOLS))
    arguments = data.draw(_arguments_for(tool) | json_values)
    response = mcp.request("tools/call", {"name": tool, "arguments": arguments})
    assert response.status_code == 200, response.content
    result = response.json()["result"]
    assert result["isError"] is (not result["structuredContent"]["ok"])


@hypothesis_settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    message=json_values
    | st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result"]),
        json_values | st.just("2.0") | st.just("tools/call"),
    )
)
def test_arbitrary_messages_are_answered_never_500(mcp, message):
    response = mcp.post(message)
    assert response.status_code in (200, 202, 400), response.content
