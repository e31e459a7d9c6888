"""describe, list_processes, list_runs and the OpenAPI documents (tools.md)."""

import json
import re

from processes.capabilities import TOOLS
from tests.runs.conftest import rid
from tests.runs.test_agent_loop import ONE_STEP, ROUTES


def test_describe_reports_protocol_profiles_lease_person_tools_and_limits(agent, settings):
    # implementing.md Step 8
    settings.LEASE_SECONDS = 321
    data = agent("describe")
    assert data["protocol"] == "agentprocess" and data["version"] == "core-2"
    assert data["leaseSeconds"] == 321 and data["person"] == {"format": "email"}
    assert data["tools"] == list(TOOLS) and len(TOOLS) == 14
    assert data["maxUploadBytes"] == settings.MAX_UPLOAD_BYTES
    assert data["limits"]["runDataBytes"] == settings.RUN_DATA_BYTES


def test_list_processes_shows_the_latest_version_with_inputs_and_requires(publish, agent):
    publish(ONE_STEP)
    publish(ONE_STEP.replace("Body of one-step.", "Body, revised."))
    publish(ROUTES)
    items = agent("list_processes")["items"]
    assert [(i["name"], i["version"]) for i in items] == [("one-step", 2), ("routed", 1)]
    assert items[0]["inputs"] == {"ticket": "string"} and items[1]["inputs"] == {}


def test_start_run_pins_the_requested_version(publish, agent):
    publish(ONE_STEP)
    publish(ONE_STEP.replace("Body of one-step.", "Body, revised."))
    assert agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["version"] == 2
    view = agent.write("start_run", process="one-step", version=1, inputs={"ticket": "T"})
    assert view["run"]["version"] == 1 and view["body"] == "Body of one-step.\n"
    agent.fails("start_run", "not_found", process="one-step", version=3, inputs={"ticket": "T"}, requestId=rid())


def test_start_run_checks_inputs_every_issue_at_once(publish, agent, settings):
    # spec §2.3
    publish("""---
name: typed
description: Typed inputs.
inputs:
  when: date
  at: datetime
  n: number
  flag: boolean
  who: person
  size: { type: string, one_of: [s, m] }
  opt: { type: string, optional: true }
steps:
  - id: done
    finish: ok
---
""")
    error = agent.fails("start_run", "invalid", process="typed", requestId=rid(), inputs={
        "when": "2026-02-30", "at": "2026-01-01T10:00:00", "n": True, "flag": 1, "who": "not-an-email",
        "size": "xl", "opt": None, "extra": 1,
    })
    assert error["issues"] == [
        "inputs.when: expected date", "inputs.at: expected datetime", "inputs.n: expected number",
        "inputs.flag: expected boolean", "inputs.who: expected person", "inputs.size: expected one of s, m",
        "inputs.opt: expected string", "inputs.extra: not declared",
    ]
    ok = agent.write("start_run", process="typed", inputs={
        "when": "2024-02-29", "at": "2026-01-01T10:00:00.5+05:30", "n": 12345678901234567890, "flag": False,
        "who": "a@b.co", "size": "m",
    })
    assert ok["data"]["inputs"]["n"] == 12345678901234567890
    settings.RUN_DATA_BYTES = 50
    error = agent.fails("start_run", "invalid", process="typed", requestId=rid(), inputs={
        "when": "2024-02-29", "at": "2026-01-01T10:00:00Z", "n": 0.1, "flag": False, "who": "a@b.co", "size": "m",
    })
    assert error["issues"][0].startswith("inputs: ") and "runDataBytes" in error["issues"][0]


def test_numbers_are_never_rounded(publish, agent):
    publish(ONE_STEP.replace("result: string", "result: number"))
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    view = agent.write("submit", token=token, output={"result": 0.1 + 0.2}, summary="s")
    assert view["data"]["steps"]["work"]["output"]["result"] == 0.30000000000000004


def test_list_runs_filters_by_process_state_and_inputs(publish, agent):
    publish(ONE_STEP)
    publish(ROUTES)
    a = agent.write("start_run", process="one-step", inputs={"ticket": "A"})["run"]["id"]
    b = agent.write("start_run", process="one-step", inputs={"ticket": "B"})["run"]["id"]
    c = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    assert [r["id"] for r in agent("list_runs")["items"]] == [c, b, a]
    assert [r["id"] for r in agent("list_runs", process="one-step")["items"]] == [b, a]
    assert [r["id"] for r in agent("list_runs", inputs={"ticket": "A"})["items"]] == [a]
    assert agent("list_runs", state="ended")["items"] == []
    page = agent("list_runs", limit=2)
    assert len(page["items"]) == 2 and page["nextCursor"]
    assert [r["id"] for r in agent("list_runs", limit=2, cursor=page["nextCursor"])["items"]] == [a]


def test_openapi_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    document = json.loads(schema.content)
    assert document["openapi"].startswith("3.1")
    oauth = ["/identity/o/api/clients", "/identity/o/api/revoke", "/identity/o/api/token"]
    assert sorted(document["paths"]) == sorted([*(f"/api/tools/{tool}" for tool in TOOLS), *oauth])
    submit = document["paths"]["/api/tools/submit"]["post"]
    assert submit["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "token", "output", "summary", "requestId"]
    assert {"200", "400", "401", "409", "422", "503"} <= set(submit["responses"])
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    # Every script and stylesheet the page loads is this server's own (no CDN).
    sources = re.findall(r'(?:src|href)="([^"]+)"', docs.content.decode())
    sources += re.findall(r'"(/static/[^"]+\.(?:js|css))"', docs.content.decode())
    assert sources and all(source.startswith("/") for source in sources), sources
    for source in sources:
        assert client.get(source).status_code == 200, source


def test_the_docs_page_can_authorize_with_an_agent_s_client_credentials(client, org):
    # The schema's OAuth2 scheme is what Swagger UI's Authorize button follows: its clientCredentials
    # token URL, given an agent's id and secret, hands out a token the tools accept.
    from accounts.oauth import create_agent

    document = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/json").content)
    scheme = document["components"]["securitySchemes"]["oauth2"]
    assert scheme["type"] == "oauth2"
    flow = scheme["flows"]["clientCredentials"]
    assert "agentprocess" in flow["scopes"]
    assert document["paths"]["/api/tools/describe"]["post"]["security"][0] == {"oauth2": ["agentprocess"]}
    _agent, client_id, secret = create_agent(organization=org, name="docs-reader")
    answer = client.post(flow["tokenUrl"], {"grant_type": "client_credentials", "scope": "agentprocess",
                                            "client_id": client_id, "client_secret": secret})
    assert answer.status_code == 200, answer.content
    described = client.post("/api/tools/describe", "{}", content_type="application/json",
                            HTTP_AUTHORIZATION=f"Bearer {answer.json()['access_token']}")
    assert described.status_code == 200 and described.json()["ok"] is True
