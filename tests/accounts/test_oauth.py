"""Agents as OAuth clients: add_agent, the token endpoint, bearer and session authentication, metadata."""

import base64
import hashlib
import io
import secrets
import stat
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.models import Client as OAuthClient
from allauth.idp.oidc.models import Token
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from django.utils.crypto import get_random_string

from accounts import token_memo
from accounts.models import Agent, Membership, Organization, User
from accounts.oauth import API_SCOPE, create_agent, identity_for_token, protected_resource_metadata_url
from config.settings import development_oidc_key

pytestmark = pytest.mark.urls("tests.accounts.urls")

WHOAMI = "/api/test/whoami"


@pytest.fixture
def org_a(db):
    return Organization.objects.create(slug="org-a", name="A")


@pytest.fixture
def org_b(db):
    return Organization.objects.create(slug="org-b", name="B")


def token_endpoint(client):
    """Discover the token endpoint from the RFC 8414 document, as an agent would."""
    response = client.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    return urlsplit(response.json()["token_endpoint"]).path


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def get_token(client, client_id, secret, **params):
    """Get an access token with the client-credentials grant and client_secret_basic."""
    response = client.post(
        token_endpoint(client),
        {"grant_type": "client_credentials", **params},
        HTTP_AUTHORIZATION=basic(client_id, secret),
    )
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def mint_person_token(user, *, client=None):
    """Store an access token for a person, as the authorization-code grant would have."""
    if client is None:
        client = OAuthClient.objects.create(name="person app", grant_types="authorization_code")
    raw = secrets.token_urlsafe(32)
    token = Token(
        type=Token.Type.ACCESS_TOKEN,
        client=client,
        user=user,
        expires_at=timezone.now() + timedelta(hours=1),
        scopes=API_SCOPE,
    )
    token.set_value(raw)
    token.save()
    return raw


# --- add_agent ---


def test_add_agent_prints_credentials_once_and_stores_only_a_hash(db):
    out = io.StringIO()
    call_command("add_agent", "invoice-bot", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("CLIENT_ID=") and lines[1].startswith("CLIENT_SECRET=")
    client_id, secret = lines[0].split("=", 1)[1], lines[1].split("=", 1)[1]
    agent = Agent.objects.get(name="invoice-bot")
    assert agent.organization.slug == "default"
    assert agent.client_id == client_id
    oauth_client = OAuthClient.objects.get(id=client_id)
    assert secret not in oauth_client.secret
    assert oauth_client.check_secret(secret)
    # Client credentials and nothing that could act for a person.
    assert oauth_client.get_grant_types() == ["client_credentials"]
    assert oauth_client.get_redirect_uris() == []
    assert oauth_client.get_response_types() == []
    assert oauth_client.type == OAuthClient.Type.CONFIDENTIAL


def test_add_agent_in_another_organization(org_a):
    call_command("add_agent", "bot", "--org", "org-a", stdout=io.StringIO())
    assert Agent.objects.get(name="bot").organization == org_a


def test_add_agent_unknown_organization_fails_clearly(db):
    with pytest.raises(CommandError, match="organization 'nope' does not exist"):
        call_command("add_agent", "bot", "--org", "nope", stdout=io.StringIO())
    assert not Agent.objects.exists()
    assert not OAuthClient.objects.exists()


def test_add_agent_duplicate_name_fails_clearly(db):
    call_command("add_agent", "bot", stdout=io.StringIO())
    with pytest.raises(CommandError, match="agent 'bot' already exists in organization 'default'"):
        call_command("add_agent", "bot", stdout=io.StringIO())
    assert OAuthClient.objects.count() == 1


# --- the token endpoint and bearer authentication ---


def test_agent_discovers_token_endpoint_gets_token_and_is_identified(client, org_a):
    agent, client_id, secret = create_agent(organization=org_a, name="bot")
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["token_endpoint"] == "http://testserver/identity/o/api/token"
    response = client.post(
        token_endpoint(client),
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=basic(client_id, secret),
    )
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] > 0
    assert body["scope"] == API_SCOPE
    assert "refresh_token" not in body

    response = client.get(WHOAMI, **bearer(body["access_token"]))
    assert response.status_code == 200
    assert response.json() == {
        "organization": "org-a",
        "kind": "agent",
        "ref": f"a_{agent.pk}",
        "is_human": False,
        "via_client": True,
        "is_operator": False,
        "email": None,
    }


def test_token_with_client_secret_post(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    response = client.post(
        token_endpoint(client),
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
    )
    assert response.status_code == 200
    token = response.json()["access_token"]
    assert client.post(WHOAMI, "{}", content_type="application/json", **bearer(token)).status_code == 200


def test_wrong_secret_gets_no_token(client, org_a):
    _agent, client_id, _secret = create_agent(organization=org_a, name="bot")
    response = client.post(
        token_endpoint(client),
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=basic(client_id, "wrong"),
    )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_agent_client_cannot_use_other_grants(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    response = client.post(
        token_endpoint(client),
        {"grant_type": "authorization_code", "code": "x", "redirect_uri": "http://127.0.0.1/cb"},
        HTTP_AUTHORIZATION=basic(client_id, secret),
    )
    assert response.status_code in (400, 401)
    assert response.json()["error"] in {"unauthorized_client", "invalid_grant"}


def test_no_token_is_401_with_bearer_challenge(client, db):
    response = client.get(WHOAMI)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response["WWW-Authenticate"] == 'Bearer realm="agentprocess"'


@pytest.mark.parametrize("header", ["Bearer garbage", "Bearer ", "Bearer", "bearer " + "x" * 86])
def test_garbage_token_is_401(client, db, header):
    response = client.get(WHOAMI, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_expired_token_is_401(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    assert client.get(WHOAMI, **bearer(token)).status_code == 200
    Token.objects.filter(client_id=client_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    token_memo.forget_all()  # as TOKEN_CACHE_SECONDS passing would (tests/accounts/test_token_memo.py)
    response = client.get(WHOAMI, **bearer(token))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_deleted_client_is_401(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    OAuthClient.objects.filter(id=client_id).delete()
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_revoked_token_is_401(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    response = client.post(
        "/identity/o/api/revoke",
        {"token": token, "token_type_hint": "access_token"},
        HTTP_AUTHORIZATION=basic(client_id, secret),
    )
    assert response.status_code == 200
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_inactive_agent_is_401(client, org_a):
    agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    Agent.objects.filter(pk=agent.pk).update(is_active=False)
    token_memo.forget_all()  # as TOKEN_CACHE_SECONDS passing would (tests/accounts/test_token_memo.py)
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_client_with_no_agent_and_no_user_is_401(client, db):
    secret = "s3cret"
    oauth_client = OAuthClient(name="stray", grant_types="client_credentials", scopes=API_SCOPE)
    oauth_client.set_secret(secret)
    oauth_client.save()
    token = get_token(client, oauth_client.id, secret)
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_agent_of_org_b_never_resolves_to_org_a(client, org_a, org_b):
    agent_a, id_a, secret_a = create_agent(organization=org_a, name="bot")
    # The same name in another organization is a different agent.
    agent_b, id_b, secret_b = create_agent(organization=org_b, name="bot")
    token_a, token_b = get_token(client, id_a, secret_a), get_token(client, id_b, secret_b)
    seen_b = client.get(WHOAMI, **bearer(token_b)).json()
    assert seen_b["organization"] == "org-b" and seen_b["ref"] == f"a_{agent_b.pk}"
    seen_a = client.get(WHOAMI, **bearer(token_a)).json()
    assert seen_a["organization"] == "org-a" and seen_a["ref"] == f"a_{agent_a.pk}"
    assert identity_for_token(token_b).organization == org_b


def test_identity_for_token_is_one_query_for_an_agent(client, org_a, django_assert_num_queries):
    agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    # The first call records when the agent was last used; calls within the next minute only read,
    # and while this process remembers the token (TOKEN_CACHE_SECONDS) not even that.
    with django_assert_num_queries(2):
        identity_for_token(token)
    agent.refresh_from_db()
    assert agent.last_used_at is not None
    with django_assert_num_queries(0):
        assert identity_for_token(token).agent.pk == agent.pk
    token_memo.forget_all()  # as TOKEN_CACHE_SECONDS passing would
    with django_assert_num_queries(1):
        identity = identity_for_token(token)
        assert identity.organization.slug == "org-a"
    token_memo.forget_all()
    Agent.objects.filter(pk=agent.pk).update(last_used_at=agent.last_used_at - timedelta(minutes=2))
    with django_assert_num_queries(2):
        identity_for_token(token)


def test_identity_for_token_is_one_query_for_a_connected_agent(db, org_a, django_assert_num_queries):
    user = User.objects.create_user("p@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    token = mint_person_token(user)
    identity_for_token(token)  # records the connection and when it was last used
    token_memo.forget_all()  # as TOKEN_CACHE_SECONDS passing would
    with django_assert_num_queries(1):
        identity = identity_for_token(token)
        assert identity.organization.slug == "org-a"
    with django_assert_num_queries(0):
        assert identity_for_token(token).user.pk == user.pk


# --- resource indicators (RFC 8707) ---


@pytest.mark.parametrize(
    ("resource", "rest_ok", "mcp_ok"),
    [
        ("http://testserver", True, True),
        ("http://testserver/", True, True),
        ("http://testserver/mcp", False, True),
        ("http://testserver/mcpx", False, False),
        ("https://elsewhere.example/mcp", False, False),
    ],
)
def test_token_for_a_resource_is_accepted_only_there(client, org_a, resource, rest_ok, mcp_ok):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret, resource=resource)
    assert Token.objects.get(client_id=client_id).get_resources() == [resource]
    assert (client.get(WHOAMI, **bearer(token)).status_code == 200) is rest_ok
    assert (identity_for_token(token, resource="http://testserver/mcp") is not None) is mcp_ok


def test_token_without_resource_is_accepted_everywhere(client, org_a):
    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    token = get_token(client, client_id, secret)
    assert identity_for_token(token, resource="http://testserver/mcp") is not None
    assert client.get(WHOAMI, **bearer(token)).status_code == 200


def test_the_called_url_is_worked_out_only_for_a_token_that_names_resources(client, org_a):
    # RFC 8707: only a token issued for named resources is checked against the URL being called.
    asked = []

    def called_url():
        asked.append(True)
        return "http://testserver/mcp"

    _agent, client_id, secret = create_agent(organization=org_a, name="bot")
    anywhere = get_token(client, client_id, secret)
    assert identity_for_token(anywhere, resource=called_url) is not None
    assert asked == []
    only_rest = get_token(client, client_id, secret, resource="http://testserver/api")
    assert identity_for_token(only_rest, resource=called_url) is None
    assert asked == [True]


# --- person-linked tokens: still an agent client (spec §6 rule 4) ---


def test_person_linked_token_is_an_agent_of_its_own_acting_for_them(client, org_a):
    # spec §6 rule 4: a token is always an agent client, even one a person signed in for; it is recorded
    # as an agent of its own (never as the person), and an operator's operator rights do not pass to it.
    user = User.objects.create_user("op@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a, is_operator=True)
    token = mint_person_token(user)
    seen = client.get(WHOAMI, **bearer(token)).json()
    agent = Agent.objects.get(for_user=user)
    assert agent.name == "person app" and agent.organization == org_a
    assert seen == {
        "organization": "org-a",
        "kind": "agent",
        "ref": f"a_{agent.pk}",
        "is_human": False,
        "via_client": True,
        "is_operator": False,
        "email": "op@example.com",
    }


def test_person_linked_token_without_membership_or_inactive_is_401(client, org_a):
    loner = User.objects.create_user("loner@example.com", "pw")
    assert client.get(WHOAMI, **bearer(mint_person_token(loner))).status_code == 401
    gone = User.objects.create_user("gone@example.com", "pw", is_active=False)
    Membership.objects.create(user=gone, organization=org_a)
    assert client.get(WHOAMI, **bearer(mint_person_token(gone))).status_code == 401


def test_authorization_code_with_pkce_gives_a_non_human_token(client, org_a):
    user = User.objects.create_user("p@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    redirect_uri = "http://127.0.0.1:33418/callback"
    app = OAuthClient.objects.create(
        name="mcp client",
        type=OAuthClient.Type.PUBLIC,
        grant_types="authorization_code",
        response_types="code",
        redirect_uris=redirect_uri,
        scopes=API_SCOPE,
        skip_consent=True,
    )
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    client.force_login(user)

    def authorize():
        response = client.get(
            urlsplit(metadata["authorization_endpoint"]).path,
            {
                "response_type": "code",
                "client_id": app.id,
                "redirect_uri": redirect_uri,
                "scope": API_SCOPE,
                "state": "st",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
        )
        assert response.status_code == 302, response.content
        assert response["Location"].startswith(redirect_uri)
        return parse_qs(urlsplit(response["Location"]).query)["code"][0]

    exchange = {"grant_type": "authorization_code", "redirect_uri": redirect_uri, "client_id": app.id}
    # PKCE is enforced: no verifier, or the wrong one, gets no token.
    assert client.post(token_endpoint(client), {**exchange, "code": authorize()}).status_code == 400
    wrong = {**exchange, "code": authorize(), "code_verifier": secrets.token_urlsafe(48)}
    assert client.post(token_endpoint(client), wrong).status_code == 400
    response = client.post(
        token_endpoint(client), {**exchange, "code": authorize(), "code_verifier": verifier}
    )
    assert response.status_code == 200, response.content
    client.logout()
    seen = client.get(WHOAMI, **bearer(response.json()["access_token"])).json()
    assert seen["ref"] == f"a_{Agent.objects.get(for_user=user, connected_client_id=app.id).pk}"
    assert seen["is_human"] is False and seen["via_client"] is True and seen["kind"] == "agent"


# --- a person's browser session ---


def test_session_gives_a_human_identity_and_post_needs_csrf(org_a):
    user = User.objects.create_user("p@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.get(WHOAMI)
    assert response.status_code == 200
    assert response.json()["is_human"] is True
    assert response.json()["kind"] == "human"
    assert response.json()["ref"] == f"u_{user.pk}"

    response = browser.post(WHOAMI, "{}", content_type="application/json")
    assert response.status_code == 403
    assert b"CSRF" in response.content

    csrf = get_random_string(32)
    browser.cookies["csrftoken"] = csrf
    assert (
        browser.post(WHOAMI, "{}", content_type="application/json", HTTP_X_CSRFTOKEN=csrf).status_code == 200
    )
    # A cross-site page cannot post even with the token in hand.
    response = browser.post(
        WHOAMI,
        "{}",
        content_type="application/json",
        HTTP_X_CSRFTOKEN=csrf,
        HTTP_ORIGIN="https://evil.example",
    )
    assert response.status_code == 403


def test_session_without_membership_is_refused_clearly(db):
    user = User.objects.create_user("nobody@example.com", "pw")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.get(WHOAMI)
    assert response.status_code == 401
    assert b"belong to no organization" in response.content


# --- metadata ---


def test_authorization_server_metadata(client, db):
    response = client.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = response.json()
    # RFC 8414 §2: issuer and response_types_supported are required; token_endpoint unless only implicit.
    assert data["issuer"] == "http://testserver"
    assert data["token_endpoint"] == "http://testserver/identity/o/api/token"
    assert "code" in data["response_types_supported"]
    assert data["authorization_endpoint"] == "http://testserver/identity/o/authorize"
    assert {"authorization_code", "client_credentials"} <= set(data["grant_types_supported"])
    assert data["code_challenge_methods_supported"] == ["S256"]
    assert {"client_secret_basic", "client_secret_post"} <= set(data["token_endpoint_auth_methods_supported"])
    assert API_SCOPE in data["scopes_supported"]
    jwks = client.get(urlsplit(data["jwks_uri"]).path).json()
    assert jwks["keys"] and jwks["keys"][0]["kty"] == "RSA"
    # The OpenID document is the same data.
    assert client.get("/.well-known/openid-configuration").json() == data


def test_protected_resource_metadata(client, db, rf):
    issuer = client.get("/.well-known/oauth-authorization-server").json()["issuer"]
    mcp = client.get("/.well-known/oauth-protected-resource/mcp")
    assert mcp.status_code == 200
    assert mcp.json()["resource"] == "http://testserver/mcp"
    root = client.get("/.well-known/oauth-protected-resource")
    assert root.json()["resource"] == "http://testserver"
    # The URL a resource server puts in `WWW-Authenticate: Bearer resource_metadata="..."`.
    url = protected_resource_metadata_url(rf.get("/"), "/mcp")
    assert url == "http://testserver/.well-known/oauth-protected-resource/mcp"
    assert client.get(urlsplit(url).path).json() == mcp.json()
    for data in (mcp.json(), root.json()):
        assert data["authorization_servers"] == [issuer]
        assert data["bearer_methods_supported"] == ["header"]
        assert data["scopes_supported"] == [API_SCOPE]


def test_metadata_uses_public_url(client, db, settings):
    settings.PUBLIC_URL = "https://processes.example.com"
    data = client.get("/.well-known/oauth-authorization-server").json()
    assert data["issuer"] == "https://processes.example.com"
    assert data["token_endpoint"] == "https://processes.example.com/identity/o/api/token"
    assert data["jwks_uri"] == "https://processes.example.com/.well-known/jwks.json"
    prm = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == "https://processes.example.com/mcp"
    assert prm["authorization_servers"] == ["https://processes.example.com"]


# --- the development signing key ---


def test_development_key_is_generated_once_and_private(tmp_path):
    path = tmp_path / "var" / "oidc-private-key.pem"
    with pytest.warns(UserWarning, match="generated a development signing key"):
        pem = development_oidc_key(path)
    assert pem.startswith("-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert development_oidc_key(path) == pem
    assert not [p for p in path.parent.iterdir() if p != path]
    # And the configured key is one allauth can sign with.
    assert get_adapter().get_signing_key().pem
