"""A refresh token used twice revokes its grant: every access and refresh token from one authorization.

RFC 9700 §4.14.2 and OAuth 2.1 §4.3.1: with rotating refresh tokens, a spent one coming back means it was
copied; the server cannot tell the thief from the client, so neither may go on.
"""

import json
import threading
from datetime import timedelta

import pytest
from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.models import Token
from django.db import connection
from django.utils import timezone

from accounts import grants
from accounts.models import Membership, Organization, SpentRefreshToken, User
from tests.accounts.test_connect import MCP_RESOURCE, connect, register
from tests.mcp import McpClient

TOKEN = "/identity/o/api/token"



@pytest.fixture
def alice(db):
    organization = Organization.objects.create(slug="org-a", name="Org A")
    user = User.objects.create_user("alice@example.com", "pw")
    Membership.objects.create(user=user, organization=organization)
    return user


def refresh(client, client_id, refresh_token):
    return client.post(
        TOKEN,
        {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": refresh_token,
         "resource": MCP_RESOURCE},
    )


def calls_mcp(client, access_token) -> int:
    return McpClient(client, access_token).request("tools/list").status_code


def calls_rest(client, access_token) -> int:
    return client.post("/api/tools/describe", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {access_token}").status_code


@pytest.mark.django_db
def test_a_replayed_refresh_token_revokes_every_token_of_its_grant(client, alice):
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)  # A1, R1
    second = refresh(client, client_id, first["refresh_token"])  # R1 -> (A2, R2)
    assert second.status_code == 200, second.content
    second = second.json()
    assert calls_mcp(client, second["access_token"]) == 200

    replay = refresh(client, client_id, first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert "revoked" in replay.json()["error_description"]
    # The grant is gone: A2 at both doors, R2 at the token endpoint, A1 too.
    assert calls_mcp(client, second["access_token"]) == 401
    assert calls_rest(client, second["access_token"]) == 401
    assert calls_mcp(client, first["access_token"]) == 401
    again = refresh(client, client_id, second["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


@pytest.mark.django_db
def test_a_replay_leaves_the_person_s_other_grants_alone(client, alice):
    client_id = register(client)[1]["client_id"]
    other_client = register(client)[1]["client_id"]
    leaked = connect(client, alice, client_id)
    same_client_later = connect(client, alice, client_id)  # a second consent: a grant of its own
    other = connect(client, alice, other_client)
    assert refresh(client, client_id, leaked["refresh_token"]).status_code == 200
    assert refresh(client, client_id, leaked["refresh_token"]).status_code == 400
    assert calls_mcp(client, same_client_later["access_token"]) == 200
    assert calls_mcp(client, other["access_token"]) == 200
    assert refresh(client, client_id, same_client_later["refresh_token"]).status_code == 200


@pytest.mark.django_db
def test_only_the_hash_of_a_spent_refresh_token_is_kept(client, alice):
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    assert refresh(client, client_id, first["refresh_token"]).status_code == 200
    [spent] = SpentRefreshToken.objects.all()
    assert spent.hash == get_adapter().hash_token(first["refresh_token"])
    assert first["refresh_token"] not in json.dumps(list(SpentRefreshToken.objects.values()), default=str)
    assert spent.client_id == client_id and spent.user == alice and spent.grant_id


@pytest.mark.django_db
def test_a_refused_refresh_spends_nothing(client, alice):
    client_id = register(client)[1]["client_id"]
    other_client = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    # Sent by another client: allauth refuses it, and it stays good for its own client.
    assert refresh(client, other_client, first["refresh_token"]).status_code == 400
    assert not SpentRefreshToken.objects.exists()
    assert refresh(client, client_id, first["refresh_token"]).status_code == 200


@pytest.mark.django_db
def test_spent_refresh_tokens_are_forgotten_once_they_would_have_expired(client, alice):
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    expires_at = Token.objects.lookup(Token.Type.REFRESH_TOKEN, first["refresh_token"]).expires_at
    assert refresh(client, client_id, first["refresh_token"]).status_code == 200
    spent = SpentRefreshToken.objects.get()
    assert spent.forget_after == expires_at
    assert grants.forget_spent_refresh_tokens(now=expires_at - timedelta(seconds=1)) == 0
    assert grants.forget_spent_refresh_tokens(now=expires_at + timedelta(seconds=1)) == 1


@pytest.mark.django_db
def test_a_refresh_token_that_never_expires_is_remembered_for_a_while(client, alice, settings):
    settings.IDP_OIDC_REFRESH_TOKEN_EXPIRES_IN = None
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    assert refresh(client, client_id, first["refresh_token"]).status_code == 200
    spent = SpentRefreshToken.objects.get()
    assert spent.forget_after == spent.spent_at + grants.NEVER_EXPIRING_KEPT


@pytest.mark.django_db
def test_a_replayed_token_from_before_grant_ids_revokes_all_the_client_holds_for_the_person(client, alice):
    client_id = register(client)[1]["client_id"]
    tokens = connect(client, alice, client_id)
    # A refresh token stored without allauth's grant id, as one issued before it kept them.
    legacy = "legacy-" + tokens["refresh_token"]
    old = Token(type=Token.Type.REFRESH_TOKEN, client_id=client_id, user=alice, scopes="agentprocess",
                expires_at=timezone.now() + timedelta(days=1))
    old.set_value(legacy)
    old.save()
    assert refresh(client, client_id, legacy).status_code == 200
    assert SpentRefreshToken.objects.get().grant_id == ""
    assert refresh(client, client_id, legacy).status_code == 400
    assert calls_mcp(client, tokens["access_token"]) == 401
    assert not Token.objects.filter(client_id=client_id, user=alice).exclude(type=Token.Type.AUTHORIZATION_CODE).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_exchanges_of_one_refresh_token_at_once_leave_no_token_standing(alice):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite ignores select_for_update); set DATABASE_URL")
    from django.test import Client

    client = Client()
    client_id = register(client)[1]["client_id"]
    first = connect(client, alice, client_id)
    barrier = threading.Barrier(2)
    answers = [None, None]

    def exchange(index):
        from django.db import connections

        try:
            barrier.wait()
            answers[index] = refresh(Client(), client_id, first["refresh_token"])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=exchange, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 400]
    # Whichever came second found the token spent and revoked what the first was given.
    [issued] = [a.json() for a in answers if a.status_code == 200]
    assert calls_mcp(client, issued["access_token"]) == 401
    assert not Token.objects.filter(type__in=[Token.Type.ACCESS_TOKEN, Token.Type.REFRESH_TOKEN]).exists()


@pytest.mark.django_db
def test_the_timer_sweep_forgets_spent_refresh_tokens_past_their_time(alice):
    from runs import timers

    now = timezone.now()
    for name, forget_after in (("old", now - timedelta(seconds=1)), ("young", now + timedelta(days=1))):
        SpentRefreshToken.objects.create(hash=name, client_id="c", user=alice, grant_id="g", spent_at=now,
                                         forget_after=forget_after)
    timers.sweep()
    assert list(SpentRefreshToken.objects.values_list("hash", flat=True)) == ["young"]
