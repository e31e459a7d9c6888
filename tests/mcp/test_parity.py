"""The same call over REST and over MCP returns the same data, tool by tool (issue 5 §2).

Reads are made twice on one state and must be equal. A write is made once through each door on two
identical situations, and the answers must be equal once what differs between two runs (ids, times,
tokens, signed links) is set aside; then each requestId is replayed through the other door and must give
back exactly what its first door gave.
"""

import re

import pytest

from accounts.identity import Identity
from accounts.oauth import create_agent
from processes.capabilities import TOOLS
from runs.tools import call_tool
from tests.mcp import APPROVAL, SCREENING, McpClient, RestClient, b64, client_credentials_token, rid
from tests.runs.conftest import assert_valid

TIME_KEYS = {"at", "expiresAt", "startedAt", "updatedAt", "readySince", "due"}
IDS = [
    (re.compile(r"\br_\d+\b"), "r_#"),
    (re.compile(r"\bw_\d+\b"), "w_#"),
    (re.compile(r"\bf_[0-9a-f]+\b"), "f_#"),
]


def normalize(value, key=None):
    """Set aside what two equal runs may not share: their ids, times, tokens, snapshots and signed links."""
    if isinstance(value, dict):
        return {k: normalize(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(item) for item in value]
    if isinstance(value, str):
        if key in TIME_KEYS:
            return "<time>"
        if key in ("token", "snapshot"):
            return f"<{key}>"
        if key == "url":
            value = value.split("?")[0]
        for pattern, placeholder in IDS:
            value = pattern.sub(placeholder, value)
    return value


def unsigned(value):
    """Drop the expiry and signature of file links, which are minted at each read."""
    if isinstance(value, dict):
        return {
            k: (v.split("?")[0] if k == "url" and isinstance(v, str) else unsigned(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [unsigned(item) for item in value]
    return value


@pytest.fixture
def agent(org):
    agent, client_id, secret = create_agent(organization=org, name="parity-agent")
    return Identity.for_agent(agent), client_id, secret


@pytest.fixture
def doors(client, agent):
    """The REST and MCP doors, holding the same agent's one bearer token."""
    token = client_credentials_token(client, agent[1], agent[2])
    return RestClient(client, token), McpClient(client, token)


@pytest.fixture
def engine(agent):
    """Call the engine directly to set up a situation, as neither door."""

    def call(tool, **arguments):
        if tool in ("start_run", "claim", "renew", "upload", "submit", "escalate", "send_event"):
            arguments.setdefault("requestId", rid())
        return call_tool(agent[0], tool, arguments)

    return call


@pytest.fixture
def published(publish):
    publish(SCREENING)
    publish(APPROVAL)


def same_read(doors, tool, **arguments):
    rest, mcp = doors
    via_rest, via_mcp = rest.call(tool, **arguments), mcp.call(tool, **arguments)
    assert via_rest["ok"], via_rest
    assert_valid(f"{tool}.result", via_mcp["data"])
    assert unsigned(via_mcp) == unsigned(via_rest)
    return via_mcp["data"]


def same_write(doors, tool, prepare):
    """Write through each door on its own fresh situation, compare, then replay each through the other door."""
    rest, mcp = doors
    rest_arguments = {**prepare(), "requestId": rid()}
    mcp_arguments = {**prepare(), "requestId": rid()}
    via_rest = rest.call(tool, **rest_arguments)
    via_mcp = mcp.call(tool, **mcp_arguments)
    assert via_rest["ok"], via_rest
    assert_valid(f"{tool}.result", via_mcp["data"])
    assert normalize(via_mcp) == normalize(via_rest)
    assert mcp.call(tool, **rest_arguments) == via_rest
    assert rest.call(tool, **mcp_arguments) == via_mcp
    return via_mcp["data"]


def same_error(doors, tool, code, **arguments):
    rest, mcp = doors
    via_rest, via_mcp = rest.call(tool, **arguments), mcp.call(tool, **arguments)
    assert via_rest["ok"] is False and via_rest["error"]["code"] == code, via_rest
    assert_valid("tool-error", via_mcp["error"])
    assert via_mcp == via_rest
    return via_mcp["error"]


def started(engine, vendor="Acme"):
    return engine("start_run", process="screening", inputs={"vendor": vendor})["run"]["id"]


def claimed(engine, vendor="Acme"):
    run_id = started(engine, vendor)
    return run_id, engine("claim", runId=run_id, stepId="screen")["token"]


def screened(engine, vendor="Acme"):
    """Return a run whose screening was submitted with a report, now waiting for `paid`."""
    run_id, token = claimed(engine, vendor)
    upload = engine("upload", fileName="report.txt", contentType="text/plain", contentBase64=b64(b"no hits"))
    engine(
        "submit",
        token=token,
        output={"cleared": True},
        summary="No hits on either list.",
        evidence=[{"kind": "file", "ref": upload["id"]}],
        next="settle",
        reason="Clean.",
    )
    return run_id


def awaiting_approval(engine):
    run_id = engine("start_run", process="approval", inputs={"topic": "Q3"})["run"]["id"]
    token = engine("claim", runId=run_id, stepId="draft")["token"]
    view = engine("submit", token=token, output={"text": "Fine."}, summary="Drafted the note.")
    return view["workItems"][0]


# --- reads --------------------------------------------------------------------------------------


def test_describe(doors):
    assert same_read(doors, "describe")["tools"] == list(TOOLS)


def test_list_processes(doors, published):
    assert [p["name"] for p in same_read(doors, "list_processes")["items"]] == ["approval", "screening"]


def test_get_run(doors, published, engine):
    run_id = screened(engine)
    view = same_read(doors, "get_run", runId=run_id)
    assert view["data"]["steps"]["screen"]["evidence"][0]["url"].startswith("http://testserver/files/")
    same_error(doors, "get_run", "not_found", runId="r_999999")


def test_get_work(doors, published, engine):
    for vendor in ("Acme", "Globex", "Initech"):
        started(engine, vendor)
    assert len(same_read(doors, "get_work")["items"]) == 3
    page = same_read(doors, "get_work", limit=2)
    assert page["nextCursor"]
    same_read(doors, "get_work", limit=2, cursor=page["nextCursor"])
    same_read(doors, "get_work", process="approval")


def test_list_runs(doors, published, engine):
    screened(engine, "Acme")
    started(engine, "Globex")
    assert len(same_read(doors, "list_runs")["items"]) == 2
    assert len(same_read(doors, "list_runs", state="waiting")["items"]) == 1
    assert len(same_read(doors, "list_runs", inputs={"vendor": "Globex"})["items"]) == 1
    same_error(doors, "list_runs", "invalid", state="asleep")


# --- writes -------------------------------------------------------------------------------------


def test_start_run(doors, published):
    view = same_write(doors, "start_run", lambda: {"process": "screening", "inputs": {"vendor": "Acme"}})
    assert view["run"]["state"] == "active"
    same_error(doors, "start_run", "invalid", process="screening", inputs={"vendor": 3}, requestId=rid())


def test_claim(doors, published, engine):
    data = same_write(doors, "claim", lambda: {"runId": started(engine), "stepId": "screen"})
    assert data["step"]["id"] == "screen" and data["token"]


def test_renew(doors, published, engine):
    def prepare():
        return {"token": claimed(engine)[1], "progress": "Searched OFAC; EU list next."}

    assert same_write(doors, "renew", prepare)["token"]


def test_upload(doors):
    data = same_write(
        doors,
        "upload",
        lambda: {"fileName": "report.txt", "contentType": "text/plain", "contentBase64": b64(b"hits")},
    )
    assert data["bytes"] == 4
    same_error(
        doors,
        "upload",
        "invalid",
        fileName="x",
        contentType="text/plain",
        contentBase64="!!",
        requestId=rid(),
    )


def test_submit(doors, published, engine):
    def prepare():
        _run_id, token = claimed(engine)
        upload = engine(
            "upload", fileName="report.txt", contentType="text/plain", contentBase64=b64(b"no hits")
        )
        return {
            "token": token,
            "output": {"cleared": True},
            "evidence": [{"kind": "file", "ref": upload["id"]}],
            "summary": "Searched both lists by legal name. No hits.",
            "next": "settle",
            "reason": "Clean.",
        }

    view = same_write(doors, "submit", prepare)
    assert view["run"]["state"] == "waiting"
    # A refused submission is refused alike, with every issue.
    _run_id, token = claimed(engine, "Globex")
    error = same_error(
        doors, "submit", "not_accepted", token=token, output={"cleared": "yes"}, summary="s", requestId=rid()
    )
    assert "evidence: file required" in error["issues"]


def test_escalate(doors, published, engine):
    def prepare():
        return {"token": claimed(engine)[1], "note": "The sanctions service is down; I cannot screen."}

    view = same_write(doors, "escalate", prepare)
    assert view["workItems"][0]["escalation"]["note"].startswith("The sanctions service")


def test_send_event(doors, published, engine):
    data = same_write(
        doors, "send_event", lambda: {"runId": screened(engine), "name": "paid", "data": {"ref": "P-1"}}
    )
    assert data == {"consumedBy": "settle"}


def test_decide(doors, published, engine):
    # Every bearer token is an agent client, so both doors refuse the same decision the same way.
    item = awaiting_approval(engine)
    arguments = {**item["decide"]["arguments"], "requestId": rid(), "decision": "approved"}
    same_error(doors, "decide", "forbidden", **arguments)
    same_error(doors, "decide", "not_found", **{**arguments, "workItemId": "w_999999"})


def test_cancel(doors, published, engine):
    run_id = started(engine)
    same_error(doors, "cancel", "forbidden", runId=run_id, reason="Duplicate.", requestId=rid())
    same_error(doors, "cancel", "not_found", runId="r_999999", reason="Duplicate.", requestId=rid())


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS)
def test_broken_arguments_are_refused_alike(doors, tool):
    error = same_error(doors, tool, "invalid", bogus=1)
    assert "bogus: not an argument of " + tool in error["issues"]
