"""Names people read hold no controls and no bidirectional marks: one rule (base/names.py) for a client's
name, an agent's and an uploaded file's, so `invoice\u202etxt.exe` can never read as `invoiceexe.txt`."""

import base64
import json
import uuid

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from django.core.management import CommandError, call_command

from accounts import connections
from accounts.admin import AgentForm
from accounts.identity import Identity
from accounts.models import Agent, Organization
from base.names import name_problem
from runs.errors import Invalid
from runs.tools import call_tool

REFUSED = [
    "\x00", "\x07", "\t", "\n", "\x1b", "\x7f", "\x85", "\x9b",  # C0, DEL, C1
    "\u2028", "\u2029",  # line and paragraph separators
    "\u200e", "\u200f", "\u061c",  # marks
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # embeddings and overrides
    "\u2066", "\u2067", "\u2068", "\u2069",  # isolates
]


@pytest.mark.parametrize("character", REFUSED)
def test_a_name_with_a_control_or_bidirectional_character_is_refused(character):
    problem = name_problem(f"invoice{character}txt.exe")
    assert problem is not None and f"U+{ord(character):04X}" in problem and "position 8" in problem


@pytest.mark.parametrize("name", ["Claude Code", "rapport-été_2026.pdf", "名前 エージェント", "שלום", "a (b) [c]"])
def test_a_name_in_any_script_is_accepted(name):
    assert name_problem(name) is None


# --- a client's name ---


@pytest.mark.django_db
def test_a_registration_whose_client_name_holds_an_override_is_refused(client):
    body = {
        "client_name": "Claude\u202eedoC",
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        "token_endpoint_auth_method": "none",
    }
    response = client.post("/identity/o/api/clients", json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
    assert "client_name" in response.json()["error_description"]
    assert not OAuthClient.objects.exists()


@pytest.mark.django_db
def test_a_metadata_document_whose_name_holds_an_isolate_is_shown_by_its_host():
    client = OAuthClient(id="https://client.example/meta.json", name="Good\u2067 bot", type=OAuthClient.Type.PUBLIC)
    client.set_redirect_uris(["https://app.example/cb"])
    client.data = {"cimd": True, "client_metadata": {}, "updated_at": 0}
    client.save()
    client.refresh_from_db()
    assert client.name == "client.example"


def test_a_stored_name_that_breaks_the_rule_is_never_shown():
    # What the consent page shows and what a connected agent is named after.
    client = OAuthClient(id="abc123", name="bot\u202e")
    assert connections.display_name(client) == "abc123"


# --- an agent's name: the admin form and the command ---


@pytest.mark.django_db
def test_the_admin_refuses_an_agent_name_with_an_override():
    organization = Organization.objects.create(slug="org-a", name="Org A")
    form = AgentForm(data={"organization": organization.pk, "name": "screener\u202e", "is_active": True})
    assert not form.is_valid()
    assert "U+202E" in " ".join(form.errors["name"])
    assert AgentForm(data={"organization": organization.pk, "name": "screener", "is_active": True}).is_valid()


@pytest.mark.django_db
def test_the_command_refuses_an_agent_name_with_a_control():
    with pytest.raises(CommandError, match=r"U\+001B"):
        call_command("add_agent", "screener\x1b[31m")
    assert not Agent.objects.exists()


# --- an uploaded file's name ---


@pytest.mark.django_db
@pytest.mark.parametrize("character", ["\u202e", "\u2066", "\u200f", "\x85"])
def test_an_upload_whose_file_name_breaks_the_rule_is_invalid_naming_the_field(character):
    organization = Organization.objects.create(slug="org-a", name="Org A")
    agent = Identity.for_agent(Agent.objects.create(organization=organization, name="screener"))
    arguments = {
        "fileName": f"report{character}fdp.exe",
        "contentType": "application/octet-stream",
        "contentBase64": base64.b64encode(b"data").decode(),
        "requestId": str(uuid.uuid4()),
    }
    with pytest.raises(Invalid) as refused:
        call_tool(agent, "upload", arguments)
    assert refused.value.code == "invalid"
    assert [issue.split(":")[0] for issue in refused.value.issues] == ["fileName"]
