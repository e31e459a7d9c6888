"""Where the authorization server sends a browser: exact redirect URIs, and nowhere foreign after logout.

OAuth 2.1 §2.3.1 / RFC 9700 §4.1.3 and the MCP authorization spec ask for exact string comparison of
redirect URIs; RFC 8252 §7.3 lets a loopback redirect URI change its port only. OpenID Connect
RP-Initiated Logout §2 allows post-logout redirection only to a registered address, with an ID token
that proves the client's session.
"""

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from allauth.idp.oidc.models import Token

from accounts import metadata_documents
from accounts.models import Membership, Organization, User
from accounts.redirects import redirect_uri_matches
from tests.accounts.test_connect import REDIRECT, authorize_params, connect, consent, pkce, register

pytestmark = pytest.mark.django_db

HTTPS = "https://ok.test/cb"
LOOPBACK = ["http://127.0.0.1:33418/callback", "http://localhost:8765/cb", "http://[::1]:9/cb"]



@pytest.fixture
def org_a(db):
    return Organization.objects.create(slug="org-a", name="Org A")


@pytest.fixture
def alice(org_a):
    user = User.objects.create_user("alice@example.com", "pw")
    Membership.objects.create(user=user, organization=org_a)
    return user


# --- the matcher itself ---


@pytest.mark.parametrize(
    ("uri", "matches"),
    [
        (HTTPS, True),
        ("https://ok.test/cb?next=https://evil.test/", False),  # an extra query
        ("https://ok.test/other", False),  # another path
        ("https://ok.test/CB", False),  # the path in another case
        ("https://OK.test/cb", False),  # the host in another case: not the same string
        ("https://ok.test/cb/", False),  # a trailing slash
        ("https://ok.test/cb#x", False),  # a fragment
        ("http://ok.test/cb", False),  # http for https
        ("https://ok.test:8443/cb", False),  # a port is only free on loopback
        ("http://127.0.0.1:51234/callback", True),  # RFC 8252 §7.3: any loopback port
        ("http://127.0.0.1/callback", True),
        ("http://localhost:1/cb", True),
        ("http://[::1]:4444/cb", True),
        ("http://127.0.0.1:51234/callback/x", False),  # ... but the same path
        ("http://127.0.0.1:51234/callback?x=1", False),  # ... and the same query
        ("http://localhost:8765/CB", False),
        ("https://127.0.0.1:33418/callback", False),  # ... and the same scheme
        ("http://[::1]:4444/callback", False),  # ... and the same host
        ("http://127.0.0.1:99999/callback", False),  # a port that is no port
    ],
)
def test_a_redirect_uri_matches_string_for_string_but_a_loopback_port(uri, matches):
    assert redirect_uri_matches(uri, [HTTPS, *LOOPBACK]) is matches


# --- the authorization endpoint ---


@pytest.mark.parametrize(
    "wrong",
    [
        "https://ok.test/cb?next=https://evil.test/",
        "https://ok.test/other",
        "https://ok.test/CB",
        "https://OK.test/cb",
        "https://ok.test/cb/",
        "https://ok.test/cb#frag",
        "http://ok.test/cb",
        "http://127.0.0.1:51234/callback/other",
        "http://localhost:1234/cb?x=1",
    ],
)
def test_an_authorization_naming_anything_but_a_registered_redirect_uri_gets_no_code(client, alice, wrong):
    # RFC 9700 §4.1.3: exact string matching, so a code never travels to an address the client did not name.
    client_id = register(client, redirect_uris=[HTTPS, *LOOPBACK])[1]["client_id"]
    _verifier, challenge = pkce()
    client.force_login(alice)
    response = client.get("/identity/o/authorize", authorize_params(client_id, challenge, redirect_uri=wrong))
    assert response.status_code == 400 and "Location" not in response
    assert b"not one this client registered" in response.content
    assert not Token.objects.filter(type=Token.Type.AUTHORIZATION_CODE).exists()


@pytest.mark.parametrize(
    "uri", [HTTPS, "http://127.0.0.1:51234/callback", "http://[::1]:4444/cb", "http://localhost:8765/cb"]
)
def test_a_registered_redirect_uri_gets_the_code_on_any_loopback_ip_port(client, alice, uri):
    # allauth's own check, after ours, still holds `localhost` to its registered port (RFC 8252 §8.3
    # advises against it); 127.0.0.1 and [::1] may name any.
    client_id = register(client, redirect_uris=[HTTPS, *LOOPBACK])[1]["client_id"]
    _html, location = consent(client, alice, client_id, redirect_uri=uri)
    assert location.startswith(uri + "?") and "code" in parse_qs(urlsplit(location).query)


def test_an_unregistered_redirect_uri_is_refused_before_signing_in(client):
    client_id = register(client, redirect_uris=[HTTPS])[1]["client_id"]
    _verifier, challenge = pkce()
    response = client.get(
        "/identity/o/authorize", authorize_params(client_id, challenge, redirect_uri=HTTPS + "?next=/x")
    )
    assert response.status_code == 400 and "Location" not in response


def test_a_client_from_a_metadata_document_is_matched_exactly_on_its_first_fetch(client, alice, monkeypatch, settings):
    settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = True  # no DNS lookup for the made-up host
    client_id = "https://client.example/meta.json"
    document = json.dumps({"client_id": client_id, "client_name": "Doc", "redirect_uris": [HTTPS],
                           "scope": "agentprocess"}).encode()

    monkeypatch.setattr(metadata_documents, "fetch", lambda fetched_id: json.loads(document))
    _verifier, challenge = pkce()
    client.force_login(alice)
    response = client.get(
        "/identity/o/authorize", authorize_params(client_id, challenge, redirect_uri=HTTPS + "?next=https://evil.test/")
    )
    assert OAuthClient.objects.filter(id=client_id).exists()  # fetched and stored before the check
    assert response.status_code == 400 and "Location" not in response
    _html, location = consent(client, alice, client_id, redirect_uri=HTTPS)
    assert location.startswith(HTTPS + "?code=")


def test_the_code_is_exchanged_only_with_the_redirect_uri_it_was_issued_for(client, alice):
    client_id = register(client)[1]["client_id"]
    _html, location = consent(client, alice, client_id)
    code = parse_qs(urlsplit(location).query)["code"][0]
    client.logout()
    response = client.post(
        "/identity/o/api/token",
        {"grant_type": "authorization_code", "code": code, "client_id": client_id, "code_verifier": client.verifier,
         "redirect_uri": "http://127.0.0.1:33418/callback?x=1"},
    )
    # oauthlib names the mismatch invalid_request; either way no token is issued.
    assert response.status_code == 400 and "access_token" not in response.json()


# --- after logout ---

BYE = "https://ok.test/bye"


def logout_params(client_id, uri, **extra):
    return {"client_id": client_id, "post_logout_redirect_uri": uri, "state": "s", **extra}


def sign_out(client, params):
    """Ask to sign out as a signed-in person, confirm on allauth's page, and return the answer."""
    page = client.get("/identity/o/logout", params)
    assert page.status_code == 200, page.content
    assert b"Are you sure you want to sign out?" in page.content
    return client.post("/identity/o/logout", {**params, "action": "logout", "csrfmiddlewaretoken": "x"})


def id_token_for(client, user, client_id):
    """Connect a client that asked for `openid` and return the ID token it got for the person."""
    tokens = connect(client, user, client_id, scope="openid agentprocess")
    return tokens["id_token"]


@pytest.fixture
def openid_client(client):
    status, body = register(
        client, scope="openid agentprocess", redirect_uris=[REDIRECT], post_logout_redirect_uris=[BYE]
    )
    assert status == 201, body
    return body["client_id"]


def test_an_anonymous_visitor_is_never_sent_to_an_address_a_stranger_registered(client):
    # Anyone can register a client naming their own host; the logout endpoint must not bounce visitors there.
    client_id = register(client, redirect_uris=["https://evil.test/cb"])[1]["client_id"]
    response = client.get("/identity/o/logout", logout_params(client_id, "https://evil.test/phish"))
    assert response.status_code == 200 and "Location" not in response
    assert b"You are signed out" in response.content


def test_an_anonymous_visitor_stays_here_even_with_a_registered_address_and_an_id_token(client, alice, openid_client):
    id_token = id_token_for(client, alice, openid_client)
    client.logout()
    response = client.get("/identity/o/logout", logout_params(openid_client, BYE, id_token_hint=id_token))
    assert response.status_code == 200 and "Location" not in response
    response = client.post("/identity/o/logout", logout_params(openid_client, BYE, id_token_hint=id_token))
    assert response.status_code == 200 and "Location" not in response


def test_a_signed_in_person_is_not_sent_to_an_address_only_the_client_s_host_vouches_for(client, alice):
    client_id = register(client, redirect_uris=["https://evil.test/cb"])[1]["client_id"]
    client.force_login(alice)
    response = sign_out(client, logout_params(client_id, "https://evil.test/phish"))
    assert response.status_code == 302 and response["Location"] == "/"
    assert "_auth_user_id" not in client.session  # signed out all the same


@pytest.mark.parametrize("uri", [BYE + "?next=https://evil.test/", BYE + "/", REDIRECT, "https://evil.test/"])
def test_a_signed_in_person_is_not_sent_to_an_unregistered_address(client, alice, openid_client, uri):
    id_token = id_token_for(client, alice, openid_client)
    client.force_login(alice)
    response = sign_out(client, logout_params(openid_client, uri, id_token_hint=id_token))
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_registered_address_needs_the_person_s_id_token(client, alice, openid_client):
    bob = User.objects.create_user("bob@example.com", "pw")
    Membership.objects.create(user=bob, organization=alice.membership.organization)
    bobs_token = id_token_for(client, bob, openid_client)
    client.force_login(alice)
    assert sign_out(client, logout_params(openid_client, BYE))["Location"] == "/"
    client.force_login(alice)
    assert sign_out(client, logout_params(openid_client, BYE, id_token_hint=bobs_token))["Location"] == "/"
    client.force_login(alice)
    assert sign_out(client, logout_params(openid_client, BYE, id_token_hint="not.a.token"))["Location"] == "/"


def test_a_signed_in_person_with_their_id_token_returns_to_the_registered_address(client, alice, openid_client):
    id_token = id_token_for(client, alice, openid_client)
    client.force_login(alice)
    response = sign_out(client, logout_params(openid_client, BYE, id_token_hint=id_token))
    assert response.status_code == 302 and response["Location"] == BYE + "?state=s"
    assert "_auth_user_id" not in client.session
