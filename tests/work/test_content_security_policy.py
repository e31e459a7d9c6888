"""Every HTML page carries the Content-Security-Policy, and none holds script the policy would refuse."""

from __future__ import annotations

import re

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from django.test import Client

from tests.browser.pages import consent_url, people_pages

# What every page's policy must say (config.settings CONTENT_SECURITY_POLICY).
REQUIRED = {
    "script-src": {"'self'"},
    "object-src": {"'none'"},
    "frame-ancestors": {"'none'"},
    "base-uri": {"'self'"},
    "form-action": {"'self'"},
}
# The consent form's answer is a redirect to the agent's registered redirect URI, which form-action refuses.
WITHOUT_FORM_ACTION = {"/identity/o/authorize"}
# A script element with neither a source nor the nonce, unless it holds data (JSON), which never runs.
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*\bnonce=)(?![^>]*\btype=\"application/json\")[^>]*>", re.I)
EVENT_HANDLER = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I)


def policy_of(response) -> dict[str, set[str]]:
    header = response.headers.get("Content-Security-Policy", "")
    directives = {}
    for part in filter(None, (p.strip() for p in header.split(";"))):
        name, *values = part.split()
        directives[name] = set(values)
    return directives


def assert_strict(response, url: str) -> None:
    policy = policy_of(response)
    assert policy, f"{url}: no Content-Security-Policy"
    path = url.split("?")[0]
    for name, values in REQUIRED.items():
        if name == "form-action" and path in WITHOUT_FORM_ACTION:
            assert name not in policy, url
            continue
        assert policy.get(name) == values if name != "script-src" else values <= policy.get(name, set()), (
            url, name, policy.get(name))
    scripts = policy["script-src"]
    assert not scripts & {"'unsafe-inline'", "'unsafe-eval'", "*", "data:"}, (url, scripts)
    assert all(source in {"'self'"} or source.startswith("'nonce-") for source in scripts), (url, scripts)
    if "text/html" in response.headers.get("Content-Type", ""):
        html = response.content.decode()
        assert not INLINE_SCRIPT.findall(html), f"{url}: inline script without the nonce"
        assert not EVENT_HANDLER.findall(html), f"{url}: an inline event handler"


def test_every_people_page_carries_the_policy_and_no_script_it_refuses(publish, agent, make_person):
    seen = 0
    for name, url, who in people_pages(publish, agent, make_person):
        client = Client()
        if who is not None:
            client.force_login(getattr(who, "user", who))
        response = client.get(url)
        assert response.status_code < 500, name
        assert_strict(response, url)
        seen += 1
    assert seen > 30


@pytest.mark.parametrize("url", ["/api/docs/", "/api/docs/?script=", "/accounts/login/", "/admin/login/"])
def test_the_api_docs_sign_in_and_admin_sign_in_carry_the_policy(client, url):
    # The admin's sign-in hands over to the one sign-in page (config/urls.py), which carries the policy.
    response = client.get(url, follow=True)
    assert response.status_code == 200
    assert_strict(response, url)


def test_the_admin_and_the_consent_page_carry_the_policy(make_person):
    admin = make_person("admin@example.com", operator=True)
    admin.user.is_staff = admin.user.is_superuser = True
    admin.user.save(update_fields=["is_staff", "is_superuser"])
    oauth_client = OAuthClient(name="Claude Code", type=OAuthClient.Type.PUBLIC)
    oauth_client.set_redirect_uris(["http://127.0.0.1:33418/callback"])
    oauth_client.set_grant_types([OAuthClient.GrantType.AUTHORIZATION_CODE])
    oauth_client.set_scopes(["agentprocess"])
    oauth_client.save()
    client = Client()
    client.force_login(admin.user)
    for url in ("/admin/", "/admin/accounts/user/", f"/admin/accounts/user/{admin.user.pk}/change/",
                "/admin/processes/draft/import/", consent_url(client_id=oauth_client.id)):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_strict(response, url)
