"""Input that once answered 500 is refused with a clear 4xx, over REST and MCP alike (spec §4.3, §6 rule 3)."""

import json
import logging

import pytest
from django.test import Client

from accounts.models import Membership, Organization, User
from accounts.oauth import create_agent
from tests.mcp import APPROVAL, McpClient, client_credentials_token, person_token
from tests.runs.conftest import b64, rid
from tests.runs.test_agent_loop import ONE_STEP

SURROGATE = "\ud800"


def raw_json(value) -> str:
    """JSON text as a hostile client sends it: a lone surrogate stays an escape, as json.dumps writes it."""
    return json.dumps(value)


@pytest.fixture
def token(org):
    _, client_id, secret = create_agent(organization=org, name="hostile")
    return client_credentials_token(Client(), client_id, secret)


@pytest.fixture
def rest(token):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def call(tool: str, arguments) -> tuple[int, dict]:
        body = arguments if isinstance(arguments, (str, bytes)) else raw_json(arguments)
        response = client.post(f"/api/tools/{tool}", body, content_type="application/json")
        return response.status_code, response.json()

    return call


@pytest.fixture
def mcp(token):
    return McpClient(Client(), token)


@pytest.fixture
def started(publish, rest):
    publish(ONE_STEP)
    status, body = rest("start_run", {"process": "one-step", "inputs": {"ticket": "T"}, "requestId": rid()})
    assert status == 200, body
    return body["data"]["run"]["id"]


def assert_invalid(status: int, body: dict, *fields: str) -> None:
    assert status == 400, body
    assert body["ok"] is False and body["error"]["code"] == "invalid", body
    issues = body["error"]["issues"]
    assert len(issues) == len(set(issues)), issues
    for name in fields:
        assert any(issue.startswith(name) for issue in issues), (name, issues)


# --- lone surrogates (spec §6 rule 3: every problem named) -----------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get_run", {"runId": SURROGATE}, "runId"),
        ("get_run", {"runId": "r_1" + SURROGATE}, "runId"),
        ("start_run", {"process": SURROGATE, "inputs": {}, "requestId": rid()}, "process"),
        ("start_run", {"process": "one-step", "inputs": {}, "requestId": SURROGATE}, "requestId"),
        ("start_run", {"process": "one-step", "inputs": {"ticket": SURROGATE}, "requestId": rid()}, "inputs.ticket"),
        ("start_run", {"process": "one-step", "inputs": {SURROGATE: "x"}, "requestId": rid()}, "inputs.\\ud800"),
        ("list_runs", {"inputs": {"ticket": SURROGATE}}, "inputs.ticket"),
        ("list_runs", {"process": SURROGATE}, "process"),
        ("upload", {"fileName": SURROGATE, "contentType": "text/plain", "contentBase64": b64(b"x"), "requestId": rid()},
         "fileName"),
        ("upload", {"fileName": "a.txt", "contentType": SURROGATE, "contentBase64": b64(b"x"), "requestId": rid()},
         "contentType"),
        ("send_event", {"runId": "r_1", "name": "paid", "data": {SURROGATE: 1}, "requestId": rid()}, "data.\\ud800"),
    ],
)
def test_a_lone_surrogate_is_invalid_naming_the_field(rest, mcp, publish, tool, arguments, field):
    publish(ONE_STEP)
    assert_invalid(*rest(tool, arguments), field)
    envelope = mcp.call(tool, **arguments)
    assert envelope["ok"] is False and envelope["error"]["code"] == "invalid"
    assert any(issue.startswith(field) for issue in envelope["error"]["issues"]), envelope


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": SURROGATE},
        {"jsonrpc": "2.0", "id": SURROGATE, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": SURROGATE, "arguments": {}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe", SURROGATE: 1}},
    ],
)
def test_a_lone_surrogate_in_the_mcp_envelope_is_an_invalid_request(mcp, message):
    response = mcp.post(raw_json(message))
    error = response.json()["error"]
    assert (response.status_code, error["code"]) in ((400, -32600), (400, -32602)), response.content
    assert "\\ud800" in error["message"] or "surrogate" in error["message"], error


# --- numbers beyond the database's range ---------------------------------------------------------


@pytest.mark.parametrize("version", [2147483648, 9007199254740991])
def test_a_version_beyond_any_stored_one_is_not_found(rest, publish, version):
    publish(ONE_STEP)
    # Often enough that the statement is prepared on the connection first (DATABASE_PREPARE_THRESHOLD).
    for _ in range(3):
        status, body = rest("start_run", {"process": "one-step", "version": 1, "inputs": {"ticket": "T"},
                                          "requestId": rid()})
        assert status == 200, body
    for _ in range(8):
        status, body = rest("start_run", {"process": "one-step", "version": version, "inputs": {"ticket": "T"},
                                          "requestId": rid()})
        assert status == 404 and body["error"]["code"] == "not_found", body


def test_a_cursor_holding_a_huge_id_is_not_recognised(rest, started):
    import datetime as dt

    from runs.paging import encode_cursor

    for _ in range(8):
        status, body = rest("list_runs", {"cursor": encode_cursor(dt.datetime.now(dt.UTC), 2**62 - 1)})
        assert status == 200, body


# --- uploads --------------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain\r\nX-Evil: 1", "text/plain\u2028", "text/\x7fplain",
                                          "text/plain\x00", "tëxt/plain"])
def test_a_content_type_that_is_no_header_value_is_refused_at_upload(rest, content_type):
    status, body = rest("upload", {"fileName": "a.txt", "contentType": content_type, "contentBase64": b64(b"x"),
                                   "requestId": rid()})
    assert_invalid(status, body, "contentType")


@pytest.mark.parametrize("file_name", ["a\r\nb.txt", "a\x00.txt", "a\x1b.txt", "a\u2028.txt"])
def test_a_file_name_with_control_characters_is_refused_at_upload(rest, file_name):
    status, body = rest("upload", {"fileName": file_name, "contentType": "text/plain", "contentBase64": b64(b"x"),
                                   "requestId": rid()})
    assert_invalid(status, body, "fileName")


def stored_upload(**fields):
    """An upload row as an older server may have stored it, and a signed link to it."""
    from runs.files import file_url
    from runs.models import Upload

    org = Organization.objects.get(slug="default")
    upload = Upload.objects.create(organization=org, public_id=f"f_{rid()[:12]}", sha256="0" * 64, size=1,
                                   content=b"x", uploaded_by="agent:a", **fields)
    return file_url(upload.public_id)


@pytest.mark.parametrize("content_type", ["text/plain\r\nX-Evil: 1", "text/plain\u2028", "t", ""])
def test_a_stored_unusable_content_type_is_served_as_octet_stream(org, content_type):
    response = Client().get(stored_upload(file_name="a.txt", content_type=content_type))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert "X-Evil" not in response


def test_a_download_keeps_attachment_and_names_any_file_per_rfc_6266(org):
    response = Client().get(stored_upload(file_name="report\u202etxt.exe", content_type="text/plain"))
    assert response.status_code == 200
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=utf-8''report%E2%80%AEtxt.exe" in disposition
    assert "\u202e" not in disposition


def test_a_download_of_a_latin_name_with_quotes_and_controls_stays_one_header(org):
    response = Client().get(stored_upload(file_name='a"b\r\nc\\d.txt', content_type="text/plain"))
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;") and "\r" not in disposition and "\n" not in disposition


def test_an_empty_upload_names_each_missing_field_once(rest):
    status, body = rest("upload", {})
    assert_invalid(status, body, "fileName", "contentType", "contentBase64", "requestId")
    assert len(body["error"]["issues"]) == 4, body


# --- NUL characters -------------------------------------------------------------------------------


def test_a_cursor_holding_a_nul_is_not_recognised(rest, org):
    cursor = b64(json.dumps(["\u0000"]).encode()).replace("+", "-").replace("/", "_").rstrip("=")
    assert_invalid(*rest("list_processes", {"cursor": cursor}), "cursor")


@pytest.mark.parametrize(("path", "status"), [
    ("/processes/%00/", 404), ("/runs/r_1%00/", 404), ("/inbox/w_1%00/", 404),
    ("/inbox/?process=%00", 400), ("/runs/?process=a%00b", 400), ("/runs/?q=%00", 400),
])
def test_a_page_asked_for_a_nul_answers_4xx(org, path, status):
    user = User.objects.create_user("nul@example.com", "pw")
    Membership.objects.create(user=user, organization=org, is_operator=True)
    client = Client()
    client.force_login(user)
    assert client.get(path).status_code == status


# --- the token endpoint (RFC 8707 §2) -------------------------------------------------------------


@pytest.mark.parametrize("resource", ["x", "", "http://testserver/mcp#frag", "http://testserver/a/./b",
                                      "http://testserver//mcp"])
@pytest.mark.parametrize("authenticated", [True, False])
def test_a_bad_resource_is_invalid_target(org, resource, authenticated):
    client = Client()
    _, client_id, secret = create_agent(organization=org, name="resourceful")
    headers = {"HTTP_AUTHORIZATION": "Basic " + b64(f"{client_id}:{secret}".encode())} if authenticated else {}
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    response = client.post(metadata["token_endpoint"].removeprefix("http://testserver"),
                           {"grant_type": "client_credentials", "scope": "agentprocess", "resource": resource},
                           **headers)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_target"


# --- scope (RFC 6750 §3.1) ------------------------------------------------------------------------


@pytest.mark.parametrize("scopes", ["openid", "openid email", ""])
def test_a_token_without_the_agentprocess_scope_reaches_no_tool(org, publish, scopes):
    publish(ONE_STEP)
    user = User.objects.create_user("scoped@example.com", "pw")
    Membership.objects.create(user=user, organization=org)
    raw = person_token(user, scopes=scopes)
    rest = Client().post("/api/tools/start_run", raw_json({"process": "one-step", "inputs": {"ticket": "T"},
                                                          "requestId": rid()}),
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert rest.status_code == 403, rest.content
    assert rest.json()["error"]["code"] == "forbidden"
    assert 'error="insufficient_scope"' in rest["WWW-Authenticate"]
    assert 'scope="agentprocess"' in rest["WWW-Authenticate"]
    mcp = McpClient(Client(), raw).request("tools/list")
    assert mcp.status_code == 403, mcp.content
    assert 'error="insufficient_scope"' in mcp["WWW-Authenticate"]
    from runs.models import Run

    assert not Run.objects.exists()


# --- decide is a person's, before any replay (spec §6 rule 4) -------------------------------------


def test_an_agent_replaying_a_persons_decide_is_forbidden(org, publish, make_person):
    from tests.runs.conftest import ToolCaller

    publish(APPROVAL)
    person = make_person("fin@example.com", groups=["finance"])
    _, client_id, secret = create_agent(organization=org, name="drafter")
    bearer = client_credentials_token(Client(), client_id, secret)
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {bearer}")

    def as_agent(tool, **arguments):
        return agent.post(f"/api/tools/{tool}", raw_json(arguments), content_type="application/json")

    run_id = as_agent("start_run", process="approval", inputs={"topic": "t"}, requestId=rid()).json()["data"]["run"]["id"]
    token = as_agent("claim", runId=run_id, stepId="draft", requestId=rid()).json()["data"]["token"]
    view = as_agent("submit", token=token, output={"text": "x"}, summary="s", requestId=rid()).json()["data"]
    [item] = view["workItems"]
    decision = {"runId": run_id, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": "approved",
                "requestId": rid()}
    assert ToolCaller(person)("decide", **decision)["run"]["state"] == "ended"
    # Never the person's result: the checks of tools.md run in their order, and the run has ended since.
    replay = as_agent("decide", **decision)
    assert replay.status_code == 409, replay.content
    assert replay.json() == {"ok": False, "error": {"code": "conflict", "issues": ["run_ended"],
                                                    "message": replay.json()["error"]["message"]}}


def test_an_agent_reusing_a_persons_decide_request_id_on_an_open_item_is_forbidden(org, publish, make_person):
    from tests.runs.conftest import ToolCaller

    publish(APPROVAL)
    person = ToolCaller(make_person("fin@example.com", groups=["finance"]))
    _, client_id, secret = create_agent(organization=org, name="drafter")
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {client_credentials_token(Client(), client_id, secret)}")

    def as_agent(tool, **arguments):
        return agent.post(f"/api/tools/{tool}", raw_json(arguments), content_type="application/json")

    def awaiting():
        run_id = as_agent("start_run", process="approval", inputs={"topic": "t"}, requestId=rid()).json()["data"]["run"]["id"]
        token = as_agent("claim", runId=run_id, stepId="draft", requestId=rid()).json()["data"]["token"]
        view = as_agent("submit", token=token, output={"text": "x"}, summary="s", requestId=rid()).json()["data"]
        [item] = view["workItems"]
        return {"runId": run_id, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": "approved"}

    first, second = awaiting(), awaiting()
    request_id = rid()
    person.write("decide", **first, requestId=request_id)
    # The same requestId on another run's open item: a person would get `conflict`; an agent is refused.
    replay = as_agent("decide", **second, requestId=request_id)
    assert replay.status_code == 403, replay.content
    assert replay.json()["error"]["code"] == "forbidden"


# --- bodies ---------------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413_with_the_envelope(rest, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    status, body = rest("upload", {"fileName": "a", "contentType": "text/plain", "contentBase64": "A" * 2000,
                                   "requestId": rid()})
    assert status == 413, body
    assert body["ok"] is False and body["error"]["code"] == "invalid"
    assert body["error"]["issues"] == ["body: larger than 1000 bytes"]


def test_the_openapi_document_names_every_status_a_tool_answers(client, db):
    document = client.get("/api/schema/?format=json").json()
    for path, item in document["paths"].items():
        if path.startswith("/api/tools/"):
            statuses = set(item["post"]["responses"])
            assert {"200", "400", "401", "403", "404", "405", "409", "413", "415", "422", "503"} <= statuses, path


def test_a_signed_link_never_reaches_a_log_line(org, caplog):
    url = stored_upload(file_name="a.txt", content_type="text/plain")
    signature = url.split("s=")[1]
    caplog.set_level(logging.DEBUG)
    Client().get(url.replace(signature, "0" * len(signature)))  # a 404, which Django logs
    Client().get(url)
    assert "0" * len(signature) not in caplog.text and signature not in caplog.text


@pytest.mark.parametrize("cookie", ['sessionid="\\000abc"', 'csrftoken="\\000"'])
def test_a_cookie_holding_a_nul_is_400_before_the_session_is_read(org, cookie):
    response = Client(HTTP_COOKIE=cookie).get("/inbox/")
    assert response.status_code == 400
