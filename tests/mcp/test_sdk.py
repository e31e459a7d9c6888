"""The official MCP Python SDK, from outside the Django process, works a process through /mcp (issue 5 §4).

The SDK is a test dependency only. Each test starts a live server, gets a client-credentials token the way
an agent does, and drives the server with `ClientSession` over `streamable_http_client`.
"""

import asyncio
import json
import re
from contextlib import asynccontextmanager

import httpx2
import pytest
import requests
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from accounts.models import DEFAULT_ORGANIZATION, Organization
from accounts.oauth import create_agent
from processes.capabilities import TOOLS
from tests.mcp import MCP_VERSIONS, SCREENING, b64, rid
from tests.runs.conftest import publish_text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def default_organization_restored(django_db_setup, django_db_blocker):
    """Put back the organization the data migration made: these transactional tests flush it away."""
    yield
    with django_db_blocker.unblock():
        Organization.objects.get_or_create(
            slug=DEFAULT_ORGANIZATION, defaults={"name": "Default organization"}
        )


def agent_token(base: str, client_id: str, secret: str) -> str:
    """Get a token as an agent does: discover the token endpoint, then client credentials."""
    metadata = requests.get(f"{base}/.well-known/oauth-authorization-server", timeout=10).json()
    answer = requests.post(
        metadata["token_endpoint"],
        data={"grant_type": "client_credentials", "scope": "agentprocess"},
        auth=(client_id, secret),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


@pytest.fixture
def server(live_server):
    """Return the live server's URL and an agent's bearer token, with the screening process published."""
    org = Organization.objects.get_or_create(slug="default", defaults={"name": "Default"})[0]
    publish_text(org, SCREENING)
    _agent, client_id, secret = create_agent(organization=org, name="sdk-agent")
    return live_server.url, agent_token(live_server.url, client_id, secret)


@asynccontextmanager
async def session_for(base: str, token: str | None):
    """Open an SDK session on /mcp over an httpx2 client that carries the bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session


async def call(session: ClientSession, tool: str, **arguments) -> dict:
    """Call a tool and return its tools.md envelope, checking the result's three views of it agree."""
    result = await session.call_tool(tool, arguments)
    envelope = result.structured_content
    [content] = result.content
    assert content.type == "text" and json.loads(content.text) == envelope
    assert result.is_error is (not envelope["ok"])
    return envelope


async def data(session: ClientSession, tool: str, **arguments) -> dict:
    envelope = await call(session, tool, **arguments)
    assert envelope["ok"], envelope
    return envelope["data"]


def test_the_official_client_takes_an_agent_only_process_from_start_to_finish(server):
    base, token = server

    async def agent() -> dict:
        async with session_for(base, token) as session:
            initialized = await session.initialize()
            assert initialized.protocol_version in MCP_VERSIONS
            assert initialized.server_info.name == "agentprocess-server"
            assert initialized.capabilities.tools is not None
            assert "get_work" in initialized.instructions

            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == list(TOOLS)
            assert all(tool.description and tool.input_schema["type"] == "object" for tool in listed.tools)

            assert (await data(session, "describe"))["version"] == "core-2"
            run_id = (
                await data(
                    session, "start_run", process="screening", inputs={"vendor": "Acme"}, requestId=rid()
                )
            )["run"]["id"]

            [item] = (await data(session, "get_work"))["items"]
            assert item["runId"] == run_id and item["handoff"] is None
            claim = await data(session, "claim", **{**item["claim"]["arguments"], "requestId": rid()})
            assert claim["step"]["evidence"] == ["file"]

            refused = await call(
                session,
                "submit",
                token=claim["token"],
                output={"cleared": True},
                summary="Checked.",
                next="settle",
                reason="Clean.",
                requestId=rid(),
            )
            assert refused["ok"] is False
            assert refused["error"]["code"] == "not_accepted"
            assert refused["error"]["issues"] == ["evidence: file required"]

            upload = await data(
                session,
                "upload",
                fileName="report.txt",
                contentType="text/plain",
                contentBase64=b64(b"No hits on OFAC or EU lists."),
                requestId=rid(),
            )
            view = await data(
                session,
                "submit",
                token=claim["token"],
                output={"cleared": True},
                evidence=[{"kind": "file", "ref": upload["id"]}],
                summary="Searched both lists by legal name. No hits; report attached.",
                next="settle",
                reason="Cleared on both lists.",
                requestId=rid(),
            )
            assert view["run"]["state"] == "waiting"
            evidence_url = view["data"]["steps"]["screen"]["evidence"][0]["url"]

            sent = await data(
                session, "send_event", runId=run_id, name="paid", data={"ref": "P-1"}, requestId=rid()
            )
            assert sent == {"consumedBy": "settle"}
            final = await data(session, "get_run", runId=run_id)
            ended = await data(session, "list_runs", state="ended")
            await session.send_ping()
            return {"run_id": run_id, "final": final, "ended": ended, "evidence_url": evidence_url}

    outcome = asyncio.run(agent())
    assert outcome["final"]["run"]["state"] == "ended"
    assert outcome["final"]["run"]["outcome"] == "onboarded"
    assert [run["id"] for run in outcome["ended"]["items"]] == [outcome["run_id"]]
    # The evidence link is absolute and opens the very bytes uploaded.
    assert outcome["evidence_url"].startswith(base)
    assert requests.get(outcome["evidence_url"], timeout=10).content == b"No hits on OFAC or EU lists."


def test_the_official_client_renews_and_escalates_a_step_it_cannot_finish(server):
    base, token = server

    async def agent() -> dict:
        async with session_for(base, token) as session:
            await session.initialize()
            run_id = (
                await data(
                    session, "start_run", process="screening", inputs={"vendor": "Globex"}, requestId=rid()
                )
            )["run"]["id"]
            claim = await data(session, "claim", runId=run_id, stepId="screen", requestId=rid())
            renewed = await data(
                session, "renew", token=claim["token"], progress="OFAC searched.", requestId=rid()
            )
            assert renewed["token"] != claim["token"]
            stale = await call(session, "escalate", token=claim["token"], note="Stuck.", requestId=rid())
            assert stale["ok"] is False
            view = await data(
                session,
                "escalate",
                token=renewed["token"],
                note="The EU list service is down; I could not finish the screening.",
                requestId=rid(),
            )
            again = await call(
                session,
                "submit",
                token=renewed["token"],
                output={"cleared": True},
                summary="Late.",
                requestId=rid(),
            )
            return {"view": view, "again": again}

    outcome = asyncio.run(agent())
    [item] = outcome["view"]["workItems"]
    assert item["stepId"] == "screen" and item["escalation"]["note"].startswith("The EU list service")
    assert outcome["again"]["ok"] is False


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("auto", ("2026-07-28",)), ("2026-07-28", ("2026-07-28",)), ("legacy", MCP_VERSIONS)],
)
def test_the_official_client_in_each_mode_works_a_run(server, mode, expected):
    # `auto` probes `server/discover` and, finding 2026-07-28, stays stateless; `legacy` initializes.
    base, token = server

    async def agent():
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
        ):
            described = await client.call_tool("describe", {})
            tools = await client.list_tools()
            started = await client.call_tool(
                "start_run", {"process": "screening", "inputs": {"vendor": "Acme"}, "requestId": rid()}
            )
            return client.session.protocol_version, described.structured_content, tools, started.structured_content

    version, envelope, tools, started = asyncio.run(agent())
    assert version in expected
    assert envelope["ok"] is True and envelope["data"]["protocol"] == "agentprocess"
    assert {tool.name for tool in tools.tools} == set(TOOLS)
    assert started["ok"] is True and started["data"]["run"]["state"] == "active"


def test_the_official_client_gets_json_rpc_errors_for_unknown_tools(server):
    base, token = server

    async def agent():
        async with session_for(base, token) as session:
            await session.initialize()
            with pytest.raises(MCPError) as raised:
                await session.call_tool("delete_everything", {})
            return raised.value.code

    assert asyncio.run(agent()) == -32602


def test_the_official_client_without_a_token_is_refused(server):
    base, _token = server

    async def agent():
        async with session_for(base, None) as session:
            with pytest.raises(MCPError):
                await session.initialize()

    asyncio.run(agent())


def test_from_outside_an_unauthenticated_request_is_401_pointing_to_valid_metadata(server):
    base, _token = server
    response = requests.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
    assert response.status_code == 401
    link = re.search(r'resource_metadata="([^"]+)"', response.headers["WWW-Authenticate"])[1]
    assert link == f"{base}/.well-known/oauth-protected-resource/mcp"
    resource = requests.get(link, timeout=10).json()
    assert resource["resource"] == f"{base}/mcp"
    [issuer] = resource["authorization_servers"]
    authorization_server = requests.get(f"{issuer}/.well-known/oauth-authorization-server", timeout=10).json()
    assert authorization_server["issuer"] == issuer
    assert {"authorization_endpoint", "token_endpoint", "response_types_supported"} <= set(
        authorization_server
    )
    assert {"authorization_code", "client_credentials"} <= set(authorization_server["grant_types_supported"])
    assert "S256" in authorization_server["code_challenge_methods_supported"]
