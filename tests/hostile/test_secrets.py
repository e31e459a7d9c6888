"""Tokens and client secrets never appear in logs, run views, admin pages or error messages."""

import logging
import time

import pytest
from django.test import Client

from accounts.models import Agent, Organization, User
from accounts.oauth import create_agent
from tests.runs.conftest import b64, rid
from tests.runs.test_agent_loop import ROUTES


@pytest.fixture
def credentials(db):
    org = Organization.objects.get_or_create(slug="default", defaults={"name": "Default"})[0]
    agent, client_id, secret = create_agent(organization=org, name="secretive")
    client = Client()
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    path = "/" + metadata["token_endpoint"].split("://", 1)[1].split("/", 1)[1]
    token = client.post(path, {"grant_type": "client_credentials", "client_id": client_id,
                               "client_secret": secret, "scope": "agentprocess"}).json()["access_token"]
    return agent, client_id, secret, token


def test_no_secret_reaches_logs_views_or_errors(credentials, publish, caplog):
    _, _, secret, access_token = credentials
    publish(ROUTES)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")

    def call(tool, **arguments):
        return client.post(f"/api/tools/{tool}", arguments, content_type="application/json").json()

    caplog.set_level(logging.DEBUG)
    run_id = call("start_run", process="routed", inputs={}, requestId=rid())["data"]["run"]["id"]
    claim_token = call("claim", runId=run_id, stepId="screen", requestId=rid())["data"]["token"]
    errors = [
        call("submit", token=claim_token, output={"cleared": "x"}, summary="s", requestId=rid()),
        call("submit", token=claim_token + "x", output={}, summary="s", requestId=rid()),
        call("renew", token="apt1.nope.nope", requestId=rid()),
    ]
    upload = call("upload", fileName="a", contentType="t", contentBase64=b64(b"x"), requestId=rid())["data"]
    done = call("submit", token=claim_token, output={"cleared": True, "tags": []},
                evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "L"}],
                summary="s", next="approve", reason="r", requestId=rid())
    view = call("get_run", runId=run_id)
    unauthenticated = Client().post("/api/tools/get_run", {"runId": run_id}, content_type="application/json")
    texts = [str(done), str(view), str(errors), unauthenticated.content.decode(), caplog.text]
    for text in texts:
        for secret_value in (secret, access_token, claim_token):
            assert secret_value not in text


def test_admin_pages_never_show_a_client_secret(credentials):
    agent, client_id, secret, access_token = credentials
    admin = User.objects.create_superuser("root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    for path in (f"/admin/accounts/agent/{agent.pk}/change/", "/admin/accounts/agent/"):
        page = client.get(path).content.decode()
        assert client_id in page or path.endswith("agent/")
        assert secret not in page and access_token not in page
    assert Agent.objects.get(pk=agent.pk).client_id == client_id


def test_file_links_expire(publish, agent, client, settings):
    from runs.files import file_url

    upload = agent.write("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"bytes"))
    fresh = file_url(upload["id"])
    assert client.get(fresh[fresh.index("/files/"):]).status_code == 200
    stale = file_url(upload["id"], now=time.time() - settings.FILE_URL_SECONDS - 5)
    assert client.get(stale[stale.index("/files/"):]).status_code == 404


def test_no_page_and_no_admin_page_shows_a_token_or_secret(credentials, publish, make_person):
    # The run and inbox pages a person sees, and every page of every model in the admin, the OAuth
    # clients and tokens included: none shows a client secret, a bearer token or a claim token.
    from django.contrib import admin

    _, _, secret, access_token = credentials
    publish(ROUTES)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")

    def call(tool, **arguments):
        return api.post(f"/api/tools/{tool}", {**arguments, "requestId": rid()}, content_type="application/json").json()

    run_id = call("start_run", process="routed", inputs={})["data"]["run"]["id"]
    claim_token = call("claim", runId=run_id, stepId="screen")["data"]["token"]
    person = Client()
    person.force_login(make_person("ops@example.com", operator=True).user)
    root = Client()
    root.force_login(User.objects.create_superuser("root@example.com", "pw"))
    pages = [(person, url) for url in (f"/runs/{run_id}/", "/runs/", "/inbox/", "/processes/routed/")]
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        pages.append((root, f"/admin/{info[0]}/{info[1]}/"))
        pages += [(root, f"/admin/{info[0]}/{info[1]}/{pk}/change/")
                  for pk in model.objects.values_list("pk", flat=True)[:3]]
    seen = 0
    for client, url in pages:
        response = client.get(url)
        assert response.status_code in (200, 302), (url, response.status_code)
        page = response.content.decode()
        seen += response.status_code == 200
        for secret_value in (secret, access_token, claim_token):
            assert secret_value not in page, url
    assert seen >= len(admin.site._registry) + 4
