"""Any MCP client, by URL: the official SDK's OAuth provider against a live server, a person in Chromium.

What MCP authorization (2026-07-28) has a client do, done by `mcp.client.auth.OAuthClientProvider`:
the 401 names the protected-resource metadata, that names this server's authorization server, the
client registers (RFC 7591) or names its Client ID Metadata Document, sends the person to sign in and
consent (here headless Chromium plays the person), exchanges the code with PKCE, and calls the tools.
"""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import ssl
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from accounts.models import DEFAULT_ORGANIZATION, Agent, Membership, Organization, User
from tests.certificates import self_signed
from tests.mcp import rid
from tests.runs.conftest import publish_text

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = Path("/usr/bin/chromium")
PASSWORD = "a long pass phrase 42"

# One agent step that needs a file, then the end.
REPORT = """---
name: vendor-report
description: Write the vendor report and file it.
inputs:
  vendor: string
steps:
  - id: report
    agent: Write the vendor's one-page report and attach it.
    output:
      risk: string
    evidence: [file]
    next: filed
  - id: filed
    finish: filed
---
Vendor reports.
"""


@pytest.fixture(scope="module", autouse=True)
def default_organization_restored(django_db_setup, django_db_blocker):
    """Put back the organization the data migration made: these transactional tests flush it away."""
    yield
    with django_db_blocker.unblock():
        Organization.objects.get_or_create(slug=DEFAULT_ORGANIZATION, defaults={"name": "Default organization"})


@pytest.fixture
def site(live_server, monkeypatch):
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    # Playwright's async API and the SDK share one event loop in this thread; the ORM is used outside it.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    org = Organization.objects.create(slug="acme", name="Acme Ltd")
    person = User.objects.create_user("alice@example.com", PASSWORD)
    Membership.objects.create(user=person, organization=org)
    publish_text(org, REPORT)
    return live_server.url


class Memory:
    """The provider's storage: tokens and client information, kept for one test."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


@contextmanager
def callback_listener():
    """A loopback redirect URI, as a desktop MCP client listens on; yields (uri, queue of queries)."""
    received: queue.Queue = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            received.put(parse_qs(urlsplit(self.path).query))
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"You may close this window.")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback", received
    finally:
        server.shutdown()
        server.server_close()


class Person:
    """Alice at her browser: signs in when sent to the server, reads the consent page, presses Connect."""

    def __init__(self, browser, received: queue.Queue):
        self.browser = browser
        self.received = received
        self.consent_pages: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        context = await self.browser.new_context()
        context.set_default_timeout(30_000)
        page = await context.new_page()
        await page.goto(authorization_url)
        await page.get_by_label("Email address").fill("alice@example.com")
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_role("button", name="Connect").wait_for()
        self.consent_pages.append(await page.inner_text("main"))
        await page.get_by_role("button", name="Connect").click()
        await page.wait_for_url("http://127.0.0.1:*/callback*")
        await context.close()

    async def callback_handler(self) -> AuthorizationCodeResult:
        query = await asyncio.to_thread(self.received.get, True, 60)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


def provider_for(site: str, person: Person, redirect_uri: str, storage: Memory, **extra) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=f"{site}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Test MCP client",
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
        **extra,
    )


async def work_a_run(client: Client) -> dict:
    """start_run, get_work, claim, upload, submit: the run ends."""

    async def data(tool: str, **arguments) -> dict:
        envelope = (await client.call_tool(tool, arguments)).structured_content
        assert envelope["ok"], envelope
        return envelope["data"]

    run_id = (await data("start_run", process="vendor-report", inputs={"vendor": "Acme"}, requestId=rid()))["run"]["id"]
    [item] = (await data("get_work"))["items"]
    assert item["runId"] == run_id
    claim = await data("claim", **{**item["claim"]["arguments"], "requestId": rid()})
    upload = await data(
        "upload", fileName="report.txt", contentType="text/plain",
        contentBase64=base64.b64encode(b"Low risk.").decode(), requestId=rid(),
    )
    done = await data(
        "submit", token=claim["token"], output={"risk": "low"}, evidence=[{"kind": "file", "ref": upload["id"]}],
        summary="Wrote and attached the report.", requestId=rid(),
    )
    return done


async def with_browser(work):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            return await work(browser)
        finally:
            await browser.close()


def test_a_client_registers_itself_a_person_consents_and_it_works_a_run(site):
    with callback_listener() as (redirect_uri, received):

        async def scenario(browser):
            person = Person(browser, received)
            storage = Memory()
            provider = provider_for(site, person, redirect_uri, storage)
            async with (
                httpx2.AsyncClient(auth=provider, timeout=60) as http,
                Client(streamable_http_client(f"{site}/mcp", http_client=http), mode="2026-07-28") as client,
            ):
                done = await work_a_run(client)
                assert client.session.protocol_version == "2026-07-28"
                first = storage.tokens

                # The access token runs out: the provider refreshes it, and the refresh token rotates.
                provider.context.token_expiry_time = time.time() - 1
                assert (await client.call_tool("describe", {})).structured_content["ok"]
                second = storage.tokens
                assert second.access_token != first.access_token
                assert second.refresh_token != first.refresh_token

            # The same person's same client, now over the handshake revision, with the stored tokens.
            async with (
                httpx2.AsyncClient(auth=provider, timeout=60) as http,
                Client(streamable_http_client(f"{site}/mcp", http_client=http), mode="legacy") as client,
            ):
                assert client.session.protocol_version in ("2025-06-18", "2025-11-25")
                assert (await client.call_tool("describe", {})).structured_content["ok"]

            # Revocation (RFC 7009) ends the next call.
            async with httpx2.AsyncClient(timeout=30) as http:
                metadata = (await http.get(f"{site}/.well-known/oauth-authorization-server")).json()
                revoked = await http.post(
                    metadata["revocation_endpoint"],
                    data={"token": second.access_token, "client_id": storage.client_info.client_id},
                )
                assert revoked.status_code == 200
                after = await http.post(
                    f"{site}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Authorization": f"Bearer {second.access_token}", "Accept": "application/json"},
                )
                assert after.status_code == 401
            return done, person.consent_pages, storage.client_info.client_id

        done, consent_pages, client_id = asyncio.run(with_browser(scenario))

    assert done["run"]["state"] == "ended" and done["run"]["outcome"] == "filed"
    [page] = consent_pages  # one sign-in and consent; the refresh needed no person
    assert "Connect Test MCP client?" in page and "Unverified" in page and "Acme Ltd" in page
    assert OAuthClient.objects.get(id=client_id).data["dcr"] is True  # it registered itself (RFC 7591)
    agent = Agent.objects.get(connected_client_id=client_id)
    assert agent.for_user.email == "alice@example.com" and agent.last_used_at is not None
    assert done["run"]["startedBy"] == agent.ref
    assert done["data"]["steps"]["report"]["by"] == agent.ref


# --- a client named by its metadata document, served here over HTTPS ---


@contextmanager
def metadata_document_server(tmp_path: Path, document_for):
    """Serve a Client ID Metadata Document over HTTPS on localhost; yields (its URL, the CA file)."""
    cert_path, key_path = self_signed(tmp_path, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    fetches = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            fetches.append(self.path)
            body = json.dumps(document_for(self.server.url)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.url = f"https://localhost:{server.server_address[1]}/oauth/client.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url, cert_path, fetches
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_named_by_its_metadata_document_connects_without_registering(site, tmp_path, settings, monkeypatch):
    settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = True  # the document is served from this machine
    with callback_listener() as (redirect_uri, received):
        document = {
            "client_name": "Document Agent",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": "agentprocess",
        }
        with metadata_document_server(tmp_path, lambda url: {**document, "client_id": url}) as (url, ca, fetches):
            monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))

            async def scenario(browser):
                person = Person(browser, received)
                storage = Memory()
                provider = provider_for(site, person, redirect_uri, storage, client_metadata_url=url)
                async with (
                    httpx2.AsyncClient(auth=provider, timeout=60) as http,
                    Client(streamable_http_client(f"{site}/mcp", http_client=http), mode="2026-07-28") as client,
                ):
                    done = await work_a_run(client)
                return done, person.consent_pages, storage.client_info.client_id

            done, consent_pages, client_id = asyncio.run(with_browser(scenario))

    assert client_id == url and fetches  # no registration: the server read the document
    assert done["run"]["outcome"] == "filed"
    [page] = consent_pages
    assert "Connect Document Agent?" in page and "Unverified" in page and "localhost" in page
    assert Agent.objects.get(connected_client_id=url).for_user.email == "alice@example.com"


