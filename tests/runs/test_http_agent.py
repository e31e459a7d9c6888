"""An agent with nothing but HTTP and its client credentials takes processes to a finish (issue: agents)."""

import base64
import uuid

import pytest
import requests

from accounts.models import Organization
from accounts.oauth import create_agent
from tests.runs.conftest import publish_text
from tests.runs.test_waits_events import EVENTS

pytestmark = pytest.mark.django_db(transaction=True)

SCREENING = """---
name: screening
description: Screen a vendor with a report and choose a route.
inputs:
  vendor: string
steps:
  - id: screen
    agent: Screen the vendor; attach the report.
    output:
      cleared: boolean
    evidence: [file]
    next:
      - { to: settle, when: Cleared }
      - { to: declined, when: Not cleared }
  - id: settle
    wait_for: paid
    next: done
  - id: declined
    finish: declined
  - id: done
    finish: onboarded
---
Screening.
"""


class HttpAgent:
    """An agent that knows only the server's URL and its client credentials."""

    def __init__(self, base: str, client_id: str, client_secret: str):
        self.base = base
        metadata = requests.get(f"{base}/.well-known/oauth-authorization-server", timeout=10).json()
        answer = requests.post(
            metadata["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": "agentprocess"},
            auth=(client_id, client_secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        self.token = answer.json()["access_token"]

    def raw(self, tool: str, **arguments):
        response = requests.post(
            f"{self.base}/api/tools/{tool}",
            json=arguments,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        return response.status_code, response.json()

    def __call__(self, tool: str, **arguments):
        if tool in {"start_run", "claim", "renew", "upload", "submit", "escalate", "send_event"}:
            arguments.setdefault("requestId", str(uuid.uuid4()))
        status, body = self.raw(tool, **arguments)
        assert body["ok"], (status, body)
        return body["data"]


@pytest.fixture
def http_agent(live_server):
    org = Organization.objects.get_or_create(slug="default", defaults={"name": "Default"})[0]
    publish_text(org, SCREENING)
    publish_text(org, EVENTS)
    _, client_id, secret = create_agent(organization=org, name="http-agent")
    return HttpAgent(live_server.url, client_id, secret)


def test_an_agent_over_plain_http_takes_a_run_to_its_finish(http_agent, live_server):
    assert http_agent("describe")["version"] == "core-2"
    run_id = http_agent("start_run", process="screening", inputs={"vendor": "Acme"})["run"]["id"]
    [item] = http_agent("get_work")["items"]
    claimed = http_agent(**{"tool": "claim", **item["claim"]["arguments"], "requestId": str(uuid.uuid4())})
    status, refused = http_agent.raw("submit", token=claimed["token"], output={"cleared": True}, summary="s",
                                     next="settle", reason="ok", requestId=str(uuid.uuid4()))
    assert status == 422 and refused["error"]["issues"] == ["evidence: file required"]
    upload = http_agent("upload", fileName="report.txt", contentType="text/plain",
                        contentBase64=base64.b64encode(b"no hits").decode())
    view = http_agent("submit", token=claimed["token"], output={"cleared": True}, summary="No hits on either list.",
                      evidence=[{"kind": "file", "ref": upload["id"]}], next="settle", reason="Clean.")
    url = view["data"]["steps"]["screen"]["evidence"][0]["url"]
    assert url.startswith(live_server.url)
    download = requests.get(url, timeout=10)
    assert download.content == b"no hits" and download.headers["X-Content-Type-Options"] == "nosniff"
    assert http_agent("send_event", runId=run_id, name="paid", data={"ref": "P-1"}) == {"consumedBy": "settle"}
    final = http_agent("get_run", runId=run_id)
    assert final["run"]["state"] == "ended" and final["run"]["outcome"] == "onboarded"
    assert [r["id"] for r in http_agent("list_runs", state="ended")["items"]] == [run_id]


def test_a_missing_or_bad_token_is_401_with_a_bearer_challenge(http_agent, live_server):
    for headers in ({}, {"Authorization": "Bearer nonsense"}):
        response = requests.post(f"{live_server.url}/api/tools/describe", json={}, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.json()["ok"] is False
