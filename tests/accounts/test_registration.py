"""Dynamic client registration (RFC 7591) costs a stranger's address little and stores only what it should.

The rate limit per address comes before any work; the body, each text, each list and the registrations
nobody used are capped; fields the server does not know are neither stored nor returned (RFC 7591 §2);
and a body that is not client metadata is 400 in the RFC 7591 §3.2.2 error form, never a 500.
"""

import json

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from allauth.idp.oidc.models import Token
from django.contrib.auth.hashers import MD5PasswordHasher

from accounts.models import Agent, Membership, Organization, User

pytestmark = pytest.mark.django_db

REDIRECT = "http://127.0.0.1:33418/callback"
METADATA = {
    "client_name": "Claude Code",
    "redirect_uris": [REDIRECT],
    "grant_types": ["authorization_code", "refresh_token"],
    "token_endpoint_auth_method": "none",
    "scope": "agentprocess",
}


class CountingHasher(MD5PasswordHasher):
    """A password hasher (Django's PASSWORD_HASHERS hook) that counts what it hashes."""

    calls = 0

    def encode(self, password, salt):
        CountingHasher.calls += 1
        return super().encode(password, salt)



@pytest.fixture
def hashes(settings):
    """Count every password hash made while the test runs."""
    settings.PASSWORD_HASHERS = ["tests.accounts.test_registration.CountingHasher"]
    CountingHasher.calls = 0
    return CountingHasher


def post(client, body: bytes | str, **extra):
    response = client.post("/identity/o/api/clients", body, content_type="application/json", **extra)
    return response.status_code, response.json()


def register(client, **metadata):
    return post(client, json.dumps({**METADATA, **metadata}))


# --- the rate limit comes first ---


def test_a_registration_refused_by_the_rate_limit_hashes_and_stores_nothing(client, settings, hashes):
    settings.ACCOUNT_RATE_LIMITS = {"oauth_client_registration": "1/m/ip"}
    assert register(client)[0] == 201
    assert hashes.calls == 0  # a public client has no secret to hash
    status, body = register(client, client_name="Second")
    assert status == 429 and body["error"] == "temporarily_unavailable"
    assert hashes.calls == 0
    assert OAuthClient.objects.count() == 1


def test_a_refused_registration_hashes_nothing_and_counts_against_the_limit(client, settings, hashes):
    settings.ACCOUNT_RATE_LIMITS = {"oauth_client_registration": "1/m/ip"}
    status, body = register(client, token_endpoint_auth_method="client_secret_basic")
    assert status == 400 and "only public clients" in body["error_description"]
    assert register(client)[0] == 429
    assert hashes.calls == 0 and not OAuthClient.objects.exists()


def test_the_rate_limit_is_per_address(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {"oauth_client_registration": "1/m/ip"}
    assert register(client)[0] == 201
    assert register(client)[0] == 429
    assert post(client, json.dumps(METADATA), REMOTE_ADDR="203.0.113.7")[0] == 201


# --- caps ---


def test_a_body_over_the_cap_is_413_and_stores_nothing(client, settings):
    settings.OAUTH_REGISTRATION_MAX_BYTES = 4096
    status, body = register(client, client_uri="https://app.example/" + "a" * 4096)
    assert status == 413 and body["error"] == "invalid_client_metadata"
    assert "4096 bytes" in body["error_description"]
    assert not OAuthClient.objects.exists()


def test_every_text_and_list_over_its_cap_is_named_at_once(client, settings):
    settings.OAUTH_REGISTRATION_MAX_CHARS = 50
    settings.OAUTH_REGISTRATION_MAX_URIS = 3
    status, body = register(
        client,
        logo_uri="https://cdn.example/" + "l" * 50,
        contacts=["ops@example.com"] * 4,
        redirect_uris=[REDIRECT, "https://app.example/" + "p" * 50],
    )
    assert status == 400 and body["error"] == "invalid_client_metadata"
    text = body["error_description"]
    assert "logo_uri is longer than 50 characters" in text
    assert "contacts has more than 3 entries" in text
    assert "redirect_uris has an entry longer than 50 characters" in text
    assert not OAuthClient.objects.exists()


def test_too_many_redirect_uris_is_invalid_redirect_uri(client, settings):
    settings.OAUTH_REGISTRATION_MAX_URIS = 10
    uris = [f"http://127.0.0.1:{port}/cb" for port in range(9000, 9011)]
    status, body = register(client, redirect_uris=uris)
    assert status == 400 and body["error"] == "invalid_redirect_uri"  # RFC 7591 §3.2.2
    assert "redirect_uris has more than 10 entries" in body["error_description"]
    assert register(client, redirect_uris=uris[:10])[0] == 201


def test_past_the_cap_the_oldest_registrations_never_used_are_deleted(client, settings):
    settings.OAUTH_UNUSED_CLIENTS_MAX = 2
    organization = Organization.objects.create(slug="org-a", name="Org A")
    person = User.objects.create_user("alice@example.com", "pw")
    Membership.objects.create(user=person, organization=organization)
    connected = register(client, client_name="connected")[1]["client_id"]
    Agent.objects.create(organization=organization, name="connected", for_user=person, connected_client_id=connected)
    signing_in = register(client, client_name="signing in")[1]["client_id"]
    # A client halfway through its first sign-in holds an authorization code: it is in use.
    Token.objects.create(client_id=signing_in, type=Token.Type.AUTHORIZATION_CODE, hash="code-hash", user=person)
    oldest = register(client, client_name="oldest")[1]["client_id"]
    older = register(client, client_name="older")[1]["client_id"]
    newest = register(client, client_name="newest")[1]["client_id"]
    assert set(OAuthClient.objects.values_list("id", flat=True)) == {connected, signing_in, older, newest}
    assert oldest not in set(OAuthClient.objects.values_list("id", flat=True))


# --- fields the server does not know ---


def test_unknown_fields_are_neither_stored_nor_returned(client):
    # RFC 7591 §2: the server ignores metadata it does not understand.
    status, body = register(
        client,
        invented="x" * 1000,
        jwks={"keys": [{"kty": "oct"}]},
        software_id="cli-1",
        client_uri="https://app.example",
    )
    assert status == 201, body
    assert "invented" not in body and "jwks" not in body
    assert body["software_id"] == "cli-1" and body["client_uri"] == "https://app.example"
    stored = OAuthClient.objects.get(id=body["client_id"]).data["client_metadata"]
    assert "invented" not in stored and "jwks" not in stored
    assert stored["client_uri"] == "https://app.example"


def test_post_logout_addresses_are_kept_when_they_are_https_addresses(client):
    # OpenID RP-initiated logout: the client names where a person may be sent back after signing out.
    status, body = register(client, post_logout_redirect_uris=["https://app.example/bye", "http://127.0.0.1:9/bye"])
    assert status == 201, body
    assert OAuthClient.objects.get(id=body["client_id"]).get_post_logout_redirect_uris() == [
        "https://app.example/bye", "http://127.0.0.1:9/bye"]
    status, body = register(client, post_logout_redirect_uris=["http://app.example/bye", "https://app.example/b#x"])
    assert status == 400 and body["error"] == "invalid_client_metadata"
    assert "is not an https address" in body["error_description"] and "has a fragment" in body["error_description"]


# --- what is no client metadata: 400, never a 500 ---


def test_json_nested_50000_deep_is_a_clear_400(client, settings):
    settings.OAUTH_REGISTRATION_MAX_BYTES = 200_000
    deep = '{"client_name": ' + "[" * 50_000 + "]" * 50_000 + "}"
    status, body = post(client, deep)
    assert status == 400 and body["error"] == "invalid_client_metadata"
    assert "nests too deeply" in body["error_description"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe\x00", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({**METADATA, "redirect_uris": [["nested"]]}).encode(), "redirect_uris must be an array of strings"),
        (json.dumps({**METADATA, "client_name": {"a": 1}}).encode(), "client_name must be a string"),
        (json.dumps({**METADATA, "scope": 1e999}).encode(), "scope must be a string"),
    ],
)
def test_a_body_that_is_no_client_metadata_is_400(client, body, said):
    status, answer = post(client, body)
    assert status == 400 and answer["error"] in {"invalid_client_metadata", "invalid_redirect_uri"}
    assert said in answer["error_description"]
    assert not OAuthClient.objects.exists()


def test_registration_off_is_404(client, settings):
    settings.IDP_OIDC_DCR_ENABLED = False
    assert client.post("/identity/o/api/clients", json.dumps(METADATA), content_type="application/json").status_code == 404
