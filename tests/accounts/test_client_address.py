"""Every limit counts a client by the address allauth's adapter reads (get_client_ip), never by a header
any client can send: X-Forwarded-For counts only behind TRUSTED_PROXY_COUNT proxies of ours."""

import json

import pytest

pytestmark = pytest.mark.django_db

REGISTRATION = {"client_name": "Claude Code", "redirect_uris": ["http://127.0.0.1:33418/callback"],
                "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none",
                "scope": "agentprocess"}


def register(client, **headers) -> int:
    return client.post("/identity/o/api/clients", json.dumps(REGISTRATION), content_type="application/json",
                       **headers).status_code


def sign_in(client, **headers) -> int:
    return client.post("/accounts/login/", {"login": "nobody@example.com", "password": "no"}, **headers).status_code


@pytest.fixture
def two_a_minute(settings):
    settings.ACCOUNT_RATE_LIMITS = {"login": "2/m/ip", "oauth_client_registration": "2/m/ip"}


def test_a_forwarded_for_header_is_ignored_without_trusted_proxies(client, two_a_minute, settings):
    assert settings.ALLAUTH_TRUSTED_PROXY_COUNT == 0  # the default: clients reach the server directly
    spoofed = [{"HTTP_X_FORWARDED_FOR": f"203.0.113.{i}"} for i in range(3)]
    assert [register(client, **headers) for headers in spoofed] == [201, 201, 429]
    assert [sign_in(client, **headers) for headers in spoofed] == [200, 200, 429]


def test_behind_a_trusted_proxy_each_client_has_its_own_allowance(client, two_a_minute, settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    proxy = {"REMOTE_ADDR": "10.0.0.2"}
    first = {**proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.1"}
    # What a client puts before the proxy's entry does not change who it is.
    first_again = {**proxy, "HTTP_X_FORWARDED_FOR": "198.51.100.7, 203.0.113.1"}
    second = {**proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.2"}
    assert [register(client, **first), register(client, **first), register(client, **first_again)] == [201, 201, 429]
    assert register(client, **second) == 201
    assert [sign_in(client, **first), sign_in(client, **first), sign_in(client, **first_again)] == [200, 200, 429]
    assert sign_in(client, **second) == 200


def test_a_trusted_client_address_header_names_the_client(client, two_a_minute, settings):
    settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER = "X-Real-IP"
    first = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_REAL_IP": "203.0.113.1"}
    second = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_REAL_IP": "203.0.113.2"}
    assert [register(client, **first) for _ in range(3)] == [201, 201, 429]
    assert register(client, **second) == 201
