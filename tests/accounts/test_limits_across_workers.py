"""Rate limits and the sign-in lockout count every request of a client, whichever worker answers it.

A node of three gunicorn workers behind one trusted proxy (TRUSTED_PROXY_COUNT=1), on Redis and on
the database's cache table. Each test is its own client behind the proxy (X-Forwarded-For), and sends its
requests at once on connections of their own so that every worker takes some.
"""

import json

import pytest
import requests

from tests.accounts.workers import (
    CACHE_BACKENDS,
    Browser,
    at_once,
    fail_until_locked_out,
    node_with_workers,
    refused_everywhere,
)


@pytest.fixture(scope="module", params=CACHE_BACKENDS)
def node(request, tmp_path_factory):
    with node_with_workers(
        tmp_path_factory.mktemp("limits"), request.param, "limits",
        TRUSTED_PROXY_COUNT="1", OAUTH_REGISTRATION_RATE="10/h/ip", ACCOUNT_LOGIN_RATE="20/h/ip",
    ) as started:
        yield started


def register(base: str, client_address: str) -> int:
    body = {"client_name": "Claude Code", "redirect_uris": ["http://127.0.0.1:33418/callback"],
            "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none",
            "scope": "agentprocess"}
    answer = requests.post(f"{base}/identity/o/api/clients", data=json.dumps(body), timeout=60,
                           headers={"Content-Type": "application/json", "X-Forwarded-For": client_address,
                                    "Connection": "close"})
    return answer.status_code


def test_registrations_are_limited_across_workers(node):
    answers = at_once(40, lambda _: register(node.base, "198.51.100.10"))
    # Ten an hour (not a minute: on a busy machine forty requests may take longer than one). A request that
    # waits too long for allauth's lock in the cache is refused too, so fewer may pass, never more.
    assert set(answers) <= {201, 429}
    assert 0 < answers.count(201) <= 10
    # Another client behind the same proxy still has its own allowance.
    assert register(node.base, "198.51.100.11") == 201


def test_the_sign_in_lockout_holds_across_workers(node):
    email = "locked@example.com"
    node.add_person(email)
    browser = Browser(node.base, {"X-Forwarded-For": "198.51.100.20"})
    # Five failures lock the address on every worker (a cache per process checked five on each).
    assert fail_until_locked_out(browser, email) <= 5
    assert refused_everywhere(browser, email) == []


def test_the_sign_in_rate_holds_across_workers(node):
    # ACCOUNT_LOGIN_RATE=20/h/ip: of thirty sign-ins from one client, ten at least are refused.
    browser = Browser(node.base, {"X-Forwarded-For": "198.51.100.30"})
    answers = at_once(30, lambda i: browser.post_apart(
        "/accounts/login/", {"login": f"nobody-{i}@example.com", "password": "no"}).status_code)
    assert set(answers) <= {200, 429}
    assert answers.count(429) >= 10
    # The proxy's other clients sign in as before.
    other = Browser(node.base, {"X-Forwarded-For": "198.51.100.31"})
    assert other.post("/accounts/login/", {"login": "nobody@example.com", "password": "no"}).status_code == 200
