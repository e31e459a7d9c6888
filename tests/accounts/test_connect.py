"""MCP clients connecting by URL: registration, client metadata documents, consent, connected agents.

MCP authorization (2026-07-28) asks an authorization server for what these hold this one to: dynamic
client registration (RFC 7591) and Client ID Metadata Documents for clients it has never seen, the
authorization code with PKCE (S256), exact redirect URIs, resource indicators (RFC 8707), refresh tokens
that rotate, and revocation (RFC 7009). A token a person gets this way is an agent's (spec §6 rule 4).
"""

import base64
import hashlib
import json
import re
import secrets
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from django.test import Client
from django.utils import timezone

from accounts import connections
from accounts.models import Agent, Membership, Organization, User
from accounts.oauth import create_agent
from runs.tools import call_tool
from tests.mcp import APPROVAL, McpClient, rid
from tests.runs.conftest import publish_text

pytestmark = pytest.mark.django_db

REDIRECT = "http://127.0.0.1:33418/callback"
MCP_RESOURCE = "http://testserver/mcp"


@pytest.fixture
def org_a(db):
    return Organization.objects.create(slug="org-a", name="Org A")


@pytest.fixture
def alice(org_a):
    user = User.objects.create_user("alice@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    return user


def register(client, **metadata) -> "tuple[int, dict]":
    body = {
        "client_name": "Claude Code",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        "scope": "agentprocess",
        **metadata,
    }
    response = client.post("/identity/o/api/clients", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_params(client_id: str, challenge: str | None, **extra) -> dict:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "agentprocess",
        "state": "st",
        "resource": MCP_RESOURCE,
    }
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method="S256")
    params.update(extra)
    return {key: value for key, value in params.items() if value is not None}


def consent(client, user, client_id: str, *, action: str = "grant", **extra) -> tuple[str, str]:
    """Sign in, open the consent page, press a button; return (page HTML, where the browser goes)."""
    verifier, challenge = pkce()
    client.force_login(user)
    page = client.get("/identity/o/authorize", authorize_params(client_id, challenge, **extra))
    assert page.status_code == 200, page.content
    html = page.content.decode()
    signed = re.search(r'name="request" value="([^"]+)"', html).group(1)
    scopes = re.findall(r'name="scopes" value="([^"]+)"', html)
    answer = client.post("/identity/o/authorize", {"request": signed, "scopes": scopes, "action": action})
    assert answer.status_code == 302
    client.verifier = verifier
    return html, answer["Location"]


def connect(client, user, client_id: str, **extra) -> dict:
    """Run the whole authorization-code flow for user and return the token response."""
    _html, location = consent(client, user, client_id, **extra)
    code = parse_qs(urlsplit(location).query)["code"][0]
    client.logout()
    response = client.post(
        "/identity/o/api/token",
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
         "code_verifier": client.verifier, "resource": extra.get("resource", MCP_RESOURCE)},
    )
    assert response.status_code == 200, response.content
    return response.json()


# --- what the authorization server says about itself ---


def test_the_metadata_offers_what_mcp_clients_look_for(client):
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["registration_endpoint"] == "http://testserver/identity/o/api/clients"
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["revocation_endpoint"] == "http://testserver/identity/o/api/revoke"
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert {"authorization_code", "refresh_token"} <= set(metadata["grant_types_supported"])


# --- dynamic client registration (RFC 7591) ---


def test_a_public_client_registers_and_gets_no_secret(client):
    status, body = register(client)
    assert status == 201, body
    assert body["token_endpoint_auth_method"] == "none" and "client_secret" not in body
    stored = OAuthClient.objects.get(id=body["client_id"])
    assert stored.type == OAuthClient.Type.PUBLIC
    assert stored.get_scopes() == ["agentprocess"] and stored.get_default_scopes() == ["agentprocess"]


def test_a_registration_is_refused_naming_every_problem(client):
    status, body = register(
        client,
        token_endpoint_auth_method="client_secret_basic",
        redirect_uris=["http://evil.example/cb", "https://ok.example/cb", "http://127.0.0.1:9/cb#frag"],
        grant_types=["authorization_code", "client_credentials"],
    )
    assert status == 400 and body["error"] == "invalid_client_metadata"
    text = body["error_description"]
    assert "only public clients" in text
    assert "client_credentials" in text
    assert "http://evil.example/cb" in text and "fragment" in text
    assert "https://ok.example/cb" not in text
    assert not OAuthClient.objects.exists()


@pytest.mark.parametrize(
    "uri", ["http://localhost:8765/cb", "http://[::1]:1/cb", "https://app.example.com/oauth/cb", "http://127.0.0.1/cb"]
)
def test_loopback_and_https_redirects_may_register(client, uri):
    assert register(client, redirect_uris=[uri])[0] == 201


def test_registrations_are_rate_limited(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {"oauth_client_registration": "2/m/ip"}
    assert [register(client)[0] for _ in range(3)] == [201, 201, 429]


def test_registrations_nobody_used_are_forgotten(client, alice, settings):
    unused = register(client)[1]["client_id"]
    used = register(client)[1]["client_id"]
    connect(client, alice, used)
    _agent, own_client, _secret = create_agent(organization=alice.membership.organization, name="bot")
    later = timezone.now() + timedelta(seconds=settings.OAUTH_UNUSED_CLIENT_SECONDS + 1)
    assert connections.forget_unused_clients(now=timezone.now()) == 0  # all still young
    assert connections.forget_unused_clients(now=later) == 1
    assert set(OAuthClient.objects.values_list("id", flat=True)) == {used, own_client}
    assert unused not in set(OAuthClient.objects.values_list("id", flat=True))


# --- the authorization request: redirect URIs and PKCE ---


def test_a_redirect_uri_not_registered_gets_no_code(client, alice):
    client_id = register(client)[1]["client_id"]
    _verifier, challenge = pkce()
    client.force_login(alice)
    for wrong in ("http://127.0.0.1:33418/other", "https://evil.example/callback", "http://localhost:33418/callback"):
        response = client.get("/identity/o/authorize", authorize_params(client_id, challenge, redirect_uri=wrong))
        # Never a redirect to an address the client did not register: the error is shown here.
        assert response.status_code == 400, wrong
        assert "Location" not in response


def test_a_loopback_redirect_may_use_any_port(client, alice):
    # RFC 8252 §7.3: a native client listens on whatever port is free.
    client_id = register(client)[1]["client_id"]
    _html, location = consent(client, alice, client_id, redirect_uri="http://127.0.0.1:51234/callback")
    assert location.startswith("http://127.0.0.1:51234/callback?code=")


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "missing"),
        ({"code_challenge_method": "plain"}, "plain"),
    ],
)
def test_pkce_is_required_and_only_s256(client, alice, extra, reason):
    client_id = register(client)[1]["client_id"]
    _verifier, challenge = pkce()
    client.force_login(alice)
    response = client.get("/identity/o/authorize", authorize_params(client_id, challenge, **extra))
    location = response.get("Location", "")
    assert "code=" not in location, reason
    assert response.status_code == 400 or parse_qs(urlsplit(location).query)["error"] == ["invalid_request"]


def test_a_code_needs_its_verifier(client, alice):
    client_id = register(client)[1]["client_id"]
    _html, location = consent(client, alice, client_id)
    code = parse_qs(urlsplit(location).query)["code"][0]
    client.logout()
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id}
    assert client.post("/identity/o/api/token", exchange).status_code == 400
    assert client.post("/identity/o/api/token", {**exchange, "code_verifier": secrets.token_urlsafe(48)}).status_code == 400


def test_a_token_request_naming_no_client_is_invalid_client(client):
    response = client.post("/identity/o/api/token", {"grant_type": "authorization_code", "code": "x"})
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert client.post("/identity/o/api/revoke", {"token": "x"}).status_code == 401


# --- the consent page ---


def test_the_consent_page_says_who_asks_where_it_returns_and_what_it_may_do(client, alice):
    client_id = register(client, logo_uri="https://cdn.example/logo.png")[1]["client_id"]
    html, _location = consent(client, alice, client_id, action="cancel")
    assert "Connect Claude Code?" in html
    assert "Unverified" in html and "come from the client itself" in html
    assert 'src="https://cdn.example/logo.png"' in html
    assert "127.0.0.1:33418" in html  # the redirect host
    assert "Org A" in html
    assert "Claude Code (agent, for alice@example.com)" in html
    assert "start runs and send events" in html
    assert "decide for a person" in html and "cancel a run" in html


def test_cancelling_consent_tells_the_client_and_connects_nothing(client, alice):
    client_id = register(client)[1]["client_id"]
    _html, location = consent(client, alice, client_id, action="cancel")
    assert parse_qs(urlsplit(location).query)["error"] == ["access_denied"]
    assert not Agent.objects.filter(for_user=alice).exists()


def test_a_person_in_no_organization_cannot_connect_a_client(client):
    loner = User.objects.create_user("loner@example.com", "pw")
    client_id = register(client)[1]["client_id"]
    client.force_login(loner)
    _verifier, challenge = pkce()
    response = client.get("/identity/o/authorize", authorize_params(client_id, challenge))
    assert response.status_code == 403 and b"not in an organization" in response.content


def test_signing_in_comes_first(client):
    client_id = register(client)[1]["client_id"]
    _verifier, challenge = pkce()
    response = client.get("/identity/o/authorize", authorize_params(client_id, challenge))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# --- who the token is ---


def test_the_token_is_an_agent_acting_for_the_person_that_may_never_decide(client, alice, org_a):
    finance = alice.process_groups.model.objects.create(organization=org_a, name="finance")
    finance.members.add(alice)
    publish_text(org_a, APPROVAL)
    client_id = register(client)[1]["client_id"]
    tokens = connect(client, alice, client_id)
    assert tokens["scope"] == "agentprocess" and tokens["refresh_token"]
    agent = Agent.objects.get(for_user=alice, connected_client_id=client_id)
    assert agent.name == "Claude Code" and agent.organization == org_a and agent.is_connected
    mcp = McpClient(client, tokens["access_token"])

    def tool(name, **arguments):
        return mcp.rpc("tools/call", {"name": name, "arguments": arguments})["structuredContent"]

    started = tool("start_run", process="approval", inputs={"topic": "Q3"}, requestId=rid())
    assert started["ok"] and started["data"]["run"]["startedBy"] == agent.ref
    run_id = started["data"]["run"]["id"]
    [item] = tool("get_work")["data"]["items"]
    claim = tool("claim", **{**item["claim"]["arguments"], "requestId": rid()})["data"]
    assert tool("submit", token=claim["token"], output={"text": "Note"}, summary="Drafted.", requestId=rid())["ok"]
    view = tool("get_run", runId=run_id)["data"]
    [work_item] = view["workItems"]
    # The person may decide in the inbox; the agent acting for them may not (spec §6 rule 4).
    refused = tool("decide", runId=run_id, workItemId=work_item["id"], decision="approved",
                   snapshot=work_item["snapshot"], requestId=rid())
    assert refused["error"]["code"] == "forbidden"
    assert tool("cancel", runId=run_id, reason="Not needed.", requestId=rid())["error"]["code"] == "forbidden"
    # The run page names the agent and whom it acts for.
    client.force_login(alice)
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert "Claude Code (agent, for alice@example.com)" in page


def test_a_token_for_another_resource_is_refused_at_mcp(client, alice):
    client_id = register(client)[1]["client_id"]
    tokens = connect(client, alice, client_id, resource="http://testserver/api")
    response = McpClient(client, tokens["access_token"]).request("tools/list")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_a_token_without_the_scope_is_403_with_the_challenge(client, alice):
    status, body = register(client, scope="openid agentprocess")
    assert status == 201
    tokens = connect(client, alice, body["client_id"], scope="openid", resource="http://testserver")
    response = McpClient(client, tokens["access_token"]).request("tools/list")
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert 'scope="agentprocess"' in response["WWW-Authenticate"]
    rest = client.post("/api/tools/describe", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    assert rest.status_code == 403


# --- refresh and revocation ---


def test_a_refresh_token_rotates(client, alice):
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "resource": MCP_RESOURCE}
    second = client.post("/identity/o/api/token", {**refresh, "refresh_token": first["refresh_token"]})
    assert second.status_code == 200, second.content
    second = second.json()
    assert second["access_token"] != first["access_token"] and second["refresh_token"] != first["refresh_token"]
    assert McpClient(client, second["access_token"]).request("tools/list").status_code == 200
    # The old refresh token was spent.
    again = client.post("/identity/o/api/token", {**refresh, "refresh_token": first["refresh_token"]})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_revoking_a_token_ends_the_next_call(client, alice):
    client_id = register(client)[1]["client_id"]
    tokens = connect(client, alice, client_id)
    mcp = McpClient(client, tokens["access_token"])
    assert mcp.request("tools/list").status_code == 200
    response = client.post("/identity/o/api/revoke", {"token": tokens["access_token"], "client_id": client_id})
    assert response.status_code == 200
    assert mcp.request("tools/list").status_code == 401


# --- client metadata documents ---


@pytest.mark.parametrize(
    "client_id",
    [
        "https://127.0.0.1/client.json",
        "https://10.1.2.3/client.json",
        "https://169.254.169.254/latest/meta-data.json",
        "https://[::1]/client.json",
        "https://localhost/client.json",
    ],
)
def test_a_metadata_document_on_a_private_address_is_never_fetched(client, alice, monkeypatch, client_id):
    fetched = []
    monkeypatch.setattr("requests.Session.get", lambda *a, **k: fetched.append(a) or pytest.fail("fetched"))
    client.force_login(alice)
    _verifier, challenge = pkce()
    response = client.get("/identity/o/authorize", authorize_params(client_id, challenge))
    assert response.status_code == 400 and "Location" not in response
    assert fetched == [] and not OAuthClient.objects.exists()


def test_the_address_check_looks_at_what_a_name_resolves_to(monkeypatch, settings):
    import socket

    def resolves_to(address):
        return lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 443))]

    monkeypatch.setattr(socket, "getaddrinfo", resolves_to("10.0.0.5"))
    assert "private or reserved" in connections.address_problem("https://client.example/meta.json")
    monkeypatch.setattr(socket, "getaddrinfo", resolves_to("93.184.215.14"))
    assert connections.address_problem("https://client.example/meta.json") is None
    settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = True
    monkeypatch.setattr(socket, "getaddrinfo", resolves_to("127.0.0.1"))
    assert connections.address_problem("https://client.example/meta.json") is None


def test_a_client_from_a_metadata_document_is_held_to_the_same_rules(db):
    client = OAuthClient(id="https://client.example/meta.json", name="Doc client", type=OAuthClient.Type.CONFIDENTIAL)
    client.set_grant_types(["authorization_code", "client_credentials", "refresh_token"])
    client.set_redirect_uris(["http://127.0.0.1:7777/cb", "http://evil.example/cb", "https://app.example/cb"])
    client.set_scopes(["openid"])
    client.data = {"cimd": True, "client_metadata": {}, "updated_at": 0}
    client.save()
    client.refresh_from_db()
    assert client.type == OAuthClient.Type.PUBLIC
    assert client.get_grant_types() == ["authorization_code", "refresh_token"]
    assert client.get_redirect_uris() == ["http://127.0.0.1:7777/cb", "https://app.example/cb"]
    assert client.get_scopes() == ["agentprocess", "openid"]


# --- connected agents: the person's page and the operators' ---


@pytest.fixture
def bob(org_a):
    user = User.objects.create_user("bob@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    return user


def test_a_person_sees_and_disconnects_their_own_agents_only(client, alice, bob):
    client_id = register(client)[1]["client_id"]
    alices = connect(client, alice, client_id)
    bobs = connect(client, bob, client_id)
    client.force_login(alice)
    page = client.get("/accounts/agents/").content.decode()
    assert "Claude Code" in page and "Unverified" in page and "bob@example.com" not in page
    bob_agent = Agent.objects.get(for_user=bob)
    client.post("/accounts/agents/", {"agent": bob_agent.pk})
    assert Agent.objects.get(pk=bob_agent.pk).is_active  # not hers to disconnect
    assert McpClient(client, bobs["access_token"]).request("tools/list").status_code == 200
    mine = Agent.objects.get(for_user=alice)
    response = client.post("/accounts/agents/", {"agent": mine.pk}, follow=True)
    assert b"disconnected" in response.content
    client.logout()
    assert McpClient(client, alices["access_token"]).request("tools/list").status_code == 401
    # The refresh token went too: reconnecting needs the person's consent again.
    refreshed = client.post("/identity/o/api/token", {"grant_type": "refresh_token", "client_id": client_id,
                                                      "refresh_token": alices["refresh_token"]})
    assert refreshed.status_code == 400
    again = connect(client, alice, client_id)
    assert McpClient(client, again["access_token"]).request("tools/list").status_code == 200
    assert Agent.objects.get(pk=mine.pk).is_active


def test_operators_see_and_disconnect_everyone_s_in_their_organization(client, alice, bob, org_a):
    client_id = register(client)[1]["client_id"]
    bobs = connect(client, bob, client_id)
    outsider_org = Organization.objects.create(slug="org-b", name="Org B")
    carol = User.objects.create_user("carol@example.com", "pw")
    Membership.objects.create(user=carol, organization=outsider_org)
    connect(client, carol, client_id)
    Membership.objects.filter(user=alice).update(is_operator=True)
    client.force_login(alice)
    page = client.get("/accounts/agents/").content.decode()
    assert "bob@example.com" in page and "carol@example.com" not in page
    client.post("/accounts/agents/", {"agent": Agent.objects.get(for_user=carol).pk})
    assert Agent.objects.get(for_user=carol).is_active
    client.post("/accounts/agents/", {"agent": Agent.objects.get(for_user=bob).pk})
    client.logout()
    assert McpClient(client, bobs["access_token"]).request("tools/list").status_code == 401


@pytest.mark.parametrize("chosen", ["²", "x", "9" * 40, "-1"])
def test_disconnecting_something_that_is_no_agent_of_yours_changes_nothing(client, alice, chosen):
    # An agent is named by its number in the digits 0-9; anything else is refused, naming the parameter.
    client.force_login(alice)
    response = client.post("/accounts/agents/", {"agent": chosen})
    assert response.status_code == 400 and b"agent:" in response.content
    response = client.post("/accounts/agents/", {"agent": ""}, follow=True)
    assert response.status_code == 200 and b"not one you can disconnect" in response.content


def test_the_connected_agents_page_checks_csrf_and_sign_in(alice):
    browser = Client(enforce_csrf_checks=True)
    assert browser.get("/accounts/agents/").status_code == 302
    browser.force_login(alice)
    assert browser.get("/accounts/agents/").status_code == 200
    assert browser.post("/accounts/agents/", {"agent": "1"}).status_code == 403


def test_a_person_who_left_the_organization_acts_through_nobody(client, alice):
    client_id = register(client)[1]["client_id"]
    tokens = connect(client, alice, client_id)
    Membership.objects.filter(user=alice).delete()
    assert McpClient(client, tokens["access_token"]).request("tools/list").status_code == 401


def test_an_agent_name_in_use_by_a_connection_does_not_block_an_administrator(client, alice, org_a):
    client_id = register(client)[1]["client_id"]
    connect(client, alice, client_id)
    agent, _client_id, _secret = create_agent(organization=org_a, name="Claude Code")
    assert agent.for_user is None


def test_call_tool_directly_with_the_connected_identity_is_an_agent(client, alice):
    from accounts.oauth import identity_for_token

    client_id = register(client)[1]["client_id"]
    identity = identity_for_token(connect(client, alice, client_id)["access_token"])
    assert identity.is_agent and not identity.is_operator and identity.email == "alice@example.com"
    assert call_tool(identity, "describe", {})["protocol"] == "agentprocess"


# --- text a database cannot store (NUL, lone surrogates) is refused, never a 500 ---


@pytest.mark.parametrize(
    "metadata",
    [
        {"redirect_uris": ["http://127.0.0.1/c\x00b"]},
        {"scope": "agentprocess \ud800"},
        {"client_name": "a\x00b"},
        {"logo_uri": "https://x.example/\x00"},
    ],
)
def test_a_registration_holding_unstorable_text_is_refused(client, metadata):
    status, body = register(client, **metadata)
    assert status == 400 and body["error"] == "invalid_client_metadata", body
    assert not OAuthClient.objects.exists()


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/identity/o/api/token", {"grant_type": "authorization_code", "client_id": "a\x00b", "code": "x"}),
        ("/identity/o/api/token", {"grant_type": "client_credentials", "client_id": "a\x00b", "client_secret": "s"}),
        ("/identity/o/api/token", {"grant_type": "refresh_token", "client_id": "abc", "refresh_token": "\x00"}),
        ("/identity/o/api/revoke", {"token": "x", "client_id": "a\x00"}),
    ],
)
def test_a_token_request_holding_unstorable_text_is_invalid_request(client, path, form):
    response = client.post(path, form)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def test_a_metadata_document_holding_unstorable_text_is_stored_without_it(db):
    client = OAuthClient(id="https://client.example/meta.json", name="bad\x00name", type=OAuthClient.Type.PUBLIC)
    client.set_redirect_uris(["http://127.0.0.1:7777/cb", "https://app.example/\x00"])
    client.data = {"cimd": True, "client_metadata": {"logo_uri": "\ud800"}, "updated_at": 0}
    client.save()
    client.refresh_from_db()
    assert client.name == "client.example"
    assert client.get_redirect_uris() == ["http://127.0.0.1:7777/cb"]
    assert client.data["client_metadata"] == {}
