"""The consent page and the connected agents, in Chromium at desktop and phone width."""

import base64
import hashlib
import secrets
from urllib.parse import urlencode

import pytest

from accounts.models import Agent
from tests.browser.conftest import screenshot, sign_in
from tests.mcp import person_token


def scroll_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


@pytest.mark.parametrize("width", [1280, 390])
def test_a_person_reads_the_consent_page_connects_and_disconnects(new_page, make_person, client, width):
    alice = make_person("alice@example.com", operator=True)
    registered = client.post(
        "/identity/o/api/clients",
        {"client_name": "Claude Code", "redirect_uris": ["http://127.0.0.1:33418/callback"],
         "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"},
        content_type="application/json",
    ).json()
    person_token(alice.user)  # an earlier connection, with a long client id, to fill the table
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    page = new_page(width=width)
    sign_in(page, alice)
    page.goto("/identity/o/authorize?" + urlencode({
        "response_type": "code", "client_id": registered["client_id"], "scope": "agentprocess", "state": "s",
        "redirect_uri": "http://127.0.0.1:33418/callback", "code_challenge": challenge,
        "code_challenge_method": "S256",
    }))
    page.get_by_role("heading", name="Connect Claude Code?").wait_for()
    assert scroll_width(page) <= width
    screenshot(page, f"consent-{width}")
    page.route("http://127.0.0.1:33418/**", lambda route: route.fulfill(body="done"))
    page.get_by_role("button", name="Connect").click()
    page.wait_for_url("http://127.0.0.1:33418/callback*")

    page.goto("/accounts/agents/")
    page.get_by_text("Claude Code").first.wait_for()
    assert scroll_width(page) <= width
    screenshot(page, f"connected-agents-{width}")
    page.get_by_role("button", name="Disconnect Claude Code for alice@example.com").click()
    page.get_by_text("Claude Code is disconnected").wait_for()
    assert not Agent.objects.get(connected_client_id=registered["client_id"]).is_active
