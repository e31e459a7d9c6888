"""Agents in the admin: adding one shows its credentials once; a new secret rotates them; disconnecting."""

import re

import pytest
from allauth.idp.oidc.models import Token
from django.test import Client

from accounts.models import Agent, Membership, Organization, User
from accounts.oauth import create_agent, identity_for_token
from tests.accounts.test_oauth import basic
from tests.mcp import client_credentials_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(db):
    return Organization.objects.create(slug="org-a", name="Org A")


@pytest.fixture
def admin_client(db):
    client = Client()
    client.force_login(User.objects.create_superuser("root@example.com", "pw"))
    return client


def shown_credentials(page: str) -> tuple[str, str]:
    found = dict(re.findall(r"(CLIENT_ID|CLIENT_SECRET)=([A-Za-z0-9_-]+)", page))
    return found["CLIENT_ID"], found["CLIENT_SECRET"]


def test_adding_an_agent_shows_a_working_client_id_and_secret_once(admin_client, org):
    response = admin_client.post("/admin/accounts/agent/add/", {"organization": org.pk, "name": "screener"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    client_id, secret = shown_credentials(page)
    assert "shown only this once" in page
    agent = Agent.objects.get(name="screener")
    assert agent.client_id == client_id and agent.organization == org
    token = client_credentials_token(Client(), client_id, secret)
    assert identity_for_token(token).ref == agent.ref
    # Never again: the change page and the list show the id, not the secret.
    for path in (f"/admin/accounts/agent/{agent.pk}/change/", "/admin/accounts/agent/"):
        later = admin_client.get(path).content.decode()
        assert secret not in later
    assert client_id in admin_client.get(f"/admin/accounts/agent/{agent.pk}/change/").content.decode()


def test_a_taken_name_is_refused_on_the_form(admin_client, org):
    create_agent(organization=org, name="screener")
    response = admin_client.post("/admin/accounts/agent/add/", {"organization": org.pk, "name": "screener"})
    assert response.status_code == 200 and b"already exists" in response.content
    assert Agent.objects.filter(name="screener").count() == 1


def test_a_new_secret_replaces_the_old_and_ends_its_tokens(admin_client, org):
    agent, client_id, old_secret = create_agent(organization=org, name="screener")
    old_token = client_credentials_token(Client(), client_id, old_secret)
    response = admin_client.post(
        "/admin/accounts/agent/", {"action": "give_new_secret", "_selected_action": [agent.pk]}
    )
    assert response.status_code == 200
    shown_id, new_secret = shown_credentials(response.content.decode())
    assert shown_id == client_id and new_secret != old_secret
    assert identity_for_token(old_token) is None
    refused = Client().post("/identity/o/api/token", {"grant_type": "client_credentials"},
                            HTTP_AUTHORIZATION=basic(client_id, old_secret))
    assert refused.status_code == 401
    assert identity_for_token(client_credentials_token(Client(), client_id, new_secret)).ref == agent.ref


def test_disconnecting_a_connected_agent_from_the_admin(admin_client, org):
    from tests.mcp import person_token

    person = User.objects.create_user("p@example.com", "pw")
    Membership.objects.create(user=person, organization=org)
    token = person_token(person)
    connected = identity_for_token(token).agent
    response = admin_client.post(
        "/admin/accounts/agent/", {"action": "disconnect", "_selected_action": [connected.pk]}, follow=True
    )
    assert b"1 agents disconnected" in response.content
    assert identity_for_token(token) is None
    assert not Token.objects.filter(user=person).exists()
    # A connected agent has no secret of its own to rotate.
    response = admin_client.post(
        "/admin/accounts/agent/", {"action": "give_new_secret", "_selected_action": [connected.pk]}, follow=True
    )
    assert b"skipped" in response.content
