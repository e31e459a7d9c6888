"""A validated access token is remembered per process for TOKEN_CACHE_SECONDS, and no longer."""

import time
from datetime import timedelta

import pytest
from allauth.idp.oidc.models import Token
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import token_memo
from accounts.models import Agent, Organization
from accounts.oauth import create_agent, identity_for_token
from tests.accounts.test_oauth import WHOAMI, bearer, get_token

pytestmark = pytest.mark.urls("tests.accounts.urls")


@pytest.fixture
def org(db):
    return Organization.objects.create(slug="memo", name="Memo")


@pytest.fixture
def later(monkeypatch):
    """step(seconds): move this process's memo clock on by that much; it stands still otherwise."""
    now = [time.monotonic()]
    monkeypatch.setattr(token_memo, "clock", lambda: now[0])

    def step(seconds: float) -> None:
        now[0] += seconds

    return step


@pytest.fixture(autouse=True)
def empty_memo():
    token_memo.forget_all()
    yield
    token_memo.forget_all()


def queries_for(raw: str) -> tuple[object, int]:
    with CaptureQueriesContext(connection) as queries:
        identity = identity_for_token(raw)
    return identity, len(queries)


def test_a_warm_call_spends_no_query_on_its_token(client, org):
    agent, client_id, secret = create_agent(organization=org, name="bot")
    token = get_token(client, client_id, secret)
    first, cold = queries_for(token)
    again, warm = queries_for(token)
    assert first.agent.pk == again.agent.pk == agent.pk
    assert cold >= 1 and warm == 0


def test_a_token_ended_by_another_process_stops_working_within_the_bound(client, org, settings, later):
    _agent, client_id, secret = create_agent(organization=org, name="bot")
    token = get_token(client, client_id, secret)
    assert client.get(WHOAMI, **bearer(token)).status_code == 200
    # Another process ends it: a write this process sees no signal of.
    Token.objects.filter(client_id=client_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    later(settings.TOKEN_CACHE_SECONDS - 1)
    assert client.get(WHOAMI, **bearer(token)).status_code == 200  # still within the documented bound
    later(1)
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_an_agent_turned_off_in_this_process_stops_at_once(client, org):
    agent, client_id, secret = create_agent(organization=org, name="bot")
    token = get_token(client, client_id, secret)
    assert client.get(WHOAMI, **bearer(token)).status_code == 200
    agent = Agent.objects.get(pk=agent.pk)
    agent.is_active = False
    agent.save()
    assert client.get(WHOAMI, **bearer(token)).status_code == 401


def test_the_memo_never_outlives_the_token(client, org, later):
    _agent, client_id, secret = create_agent(organization=org, name="bot")
    token = get_token(client, client_id, secret)
    Token.objects.filter(client_id=client_id).update(expires_at=timezone.now() + timedelta(seconds=2))
    assert client.get(WHOAMI, **bearer(token)).status_code == 200
    later(2.5)  # within TOKEN_CACHE_SECONDS, past the token's own expiry: the database is asked again
    _identity, asked = queries_for(token)
    assert asked >= 1


def test_zero_seconds_remembers_nothing(client, org, settings):
    settings.TOKEN_CACHE_SECONDS = 0
    _agent, client_id, secret = create_agent(organization=org, name="bot")
    token = get_token(client, client_id, secret)
    queries_for(token)
    _identity, asked = queries_for(token)
    assert asked >= 1
