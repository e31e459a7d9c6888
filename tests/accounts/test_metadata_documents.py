"""Client ID Metadata Documents are fetched only from public addresses, and from the very address checked.

An IPv6 address that leads to a private IPv4 one (mapped, compatible, NAT64, 6to4) is private too; and a
host name is resolved once, so a name that answers a public address to the check and a private one to
the connection (DNS rebinding) cannot turn the fetch inward. TLS is still verified against the name.
"""

import ipaddress
import json
import socket
import ssl
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from allauth.idp.oidc.models import Client as OAuthClient

from accounts import connections, metadata_documents
from accounts.models import Membership, Organization, User
from tests.accounts.test_connect import REDIRECT, authorize_params, pkce
from tests.certificates import self_signed

# --- the address check ---


@pytest.mark.parametrize(
    "host",
    [
        "[::127.0.0.1]",  # IPv4-compatible (RFC 4291 §2.5.5.1)
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::ffff:10.1.2.3]",
        "[64:ff9b::7f00:1]",  # NAT64 (RFC 6052) to 127.0.0.1
        "[64:ff9b::a9fe:a9fe]",  # NAT64 to 169.254.169.254
        "[64:ff9b:1::a00:1]",  # local-use NAT64 (RFC 8215)
        "[2002:7f00:1::]",  # 6to4 (RFC 3056) of 127.0.0.1
        "[2002:c0a8:101::1]",  # 6to4 of 192.168.1.1
        "[fd00::1]",
        "[fe80::1]",
        "100.64.0.1",
    ],
)
def test_an_address_that_leads_to_a_private_one_is_refused(host):
    problem = connections.address_problem(f"https://{host}/client.json")
    assert problem is not None and "private or reserved" in problem


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"])
def test_a_public_address_and_the_forms_that_lead_to_one_are_allowed(address):
    assert connections.ip_problem(ipaddress.ip_address(address)) is None


def test_a_name_with_one_private_address_among_public_ones_is_refused(monkeypatch):
    found = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, 443, 0, 0))
             for address in ("2606:4700::1111", "64:ff9b::a00:5")]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: found)
    assert "leads to 10.0.0.5" in connections.address_problem("https://client.example/client.json")


# --- the fetch goes to the address that was checked ---


def certificate(directory, name: str):
    """A self-signed certificate (and key) for the DNS name `name` only: no IP address in it."""
    return self_signed(directory, dns_names=[name])


@contextmanager
def document_server(directory, certificate_name: str, document_for):
    """Serve a metadata document over HTTPS on 127.0.0.1; yield (port, CA file, what each request said)."""
    cert_path, key_path = certificate(directory, certificate_name)
    seen = {"hosts": [], "server_names": []}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen["hosts"].append(self.headers["Host"])
            body = json.dumps(document_for(self.headers["Host"], self.path)).encode()
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
    context.sni_callback = lambda _socket, name, _context: seen["server_names"].append(name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], cert_path, seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def rebinding_name(monkeypatch):
    """`client.test` resolves to 127.0.0.1 the first time and to an unreachable address every time after."""
    real = socket.getaddrinfo
    asked = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "client.test":
            asked.append(host)
            return real("127.0.0.1" if len(asked) == 1 else "192.0.2.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.fixture
def alice(db):
    organization = Organization.objects.create(slug="org-a", name="Org A")
    user = User.objects.create_user("alice@example.com", "pw")
    Membership.objects.create(user=user, organization=organization)
    return user


def document(host: str, path: str) -> dict:
    return {
        "client_id": f"https://{host}{path}",
        "client_name": "Document Agent",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "scope": "agentprocess",
        "invented": "not kept",
    }


def test_the_document_is_fetched_from_the_address_checked_with_the_name_kept(
    client, alice, settings, monkeypatch, tmp_path, rebinding_name
):
    settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = True  # the document is served from this machine
    with document_server(tmp_path, "client.test", document) as (port, ca, seen):
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))
        client_id = f"https://client.test:{port}/client.json"
        client.force_login(alice)
        page = client.get("/identity/o/authorize", authorize_params(client_id, pkce()[1]))
    assert page.status_code == 200, page.content
    assert "Connect Document Agent?" in page.content.decode()
    # Resolved once; connected to what that gave; the name sent as the Host and the TLS server name.
    assert rebinding_name == ["client.test"]
    assert seen["hosts"] == [f"client.test:{port}"] and seen["server_names"] == ["client.test"]
    stored = OAuthClient.objects.get(id=client_id)
    assert stored.data["cimd"] and "invented" not in stored.data["client_metadata"]


def test_a_certificate_for_another_name_is_refused(client, alice, settings, monkeypatch, tmp_path, rebinding_name):
    settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = True
    with document_server(tmp_path, "other.test", document) as (port, ca, seen):
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))
        client_id = f"https://client.test:{port}/client.json"
        client.force_login(alice)
        page = client.get("/identity/o/authorize", authorize_params(client_id, pkce()[1]))
    assert page.status_code == 400 and "Location" not in page
    assert seen["hosts"] == [] and not OAuthClient.objects.filter(id=client_id).exists()


def test_fetches_are_limited_per_address_on_the_authorization_request(client, alice, settings, monkeypatch):
    # The authorization request is a GET, which allauth's own rate limiter leaves alone.
    settings.OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE = 2
    fetched = []

    def fetch(client_id):
        fetched.append(client_id)
        raise metadata_documents.DocumentRefused("not served in this test")

    monkeypatch.setattr(metadata_documents, "fetch", fetch)
    client.force_login(alice)
    for number in range(4):
        client_id = f"https://client{number}.example/client.json"
        assert client.get("/identity/o/authorize", authorize_params(client_id, pkce()[1])).status_code == 400
    assert fetched == ["https://client0.example/client.json", "https://client1.example/client.json"]
    other = "https://client9.example/client.json"
    client.get("/identity/o/authorize", authorize_params(other, pkce()[1]), REMOTE_ADDR="203.0.113.7")
    assert fetched[-1] == other
