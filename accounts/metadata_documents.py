"""Client ID Metadata Documents: a client whose `client_id` is an https URL is read from that URL.

This server fetches the documents itself (allauth's own fetch is off: IDP_OIDC_CIMD_ENABLED = False),
because allauth resolves the host name once for the address check and again for the connection, and a
name that answers a public address first and a private one next (DNS rebinding) would make the server
read its own network. Here the name is resolved once (`connections.checked_addresses`), and the
connection goes to the address that was checked, with the name in the Host header and the TLS server
name (SNI), and the certificate verified against the name.

The fetch keeps allauth's limits: one second, 2 KiB, no redirects, one fetch of a URL at a time, and a
rate per address (OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE). A document is kept for
OAUTH_CLIENT_METADATA_CACHE_SECONDS; a failed fetch keeps the client stored before, if any.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import posixpath
import time
from urllib.parse import urlsplit, urlunsplit

import requests
from allauth.account.adapter import get_adapter as get_account_adapter
from allauth.idp.oidc.models import Client
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from requests.adapters import HTTPAdapter

from accounts import connections
from accounts.registration import LIST_FIELDS, TEXT_FIELDS
from base.storable import text_problem

FETCH_SECONDS = 1
MAX_BYTES = 2 * 1024

log = logging.getLogger(__name__)


class DocumentRefused(ValueError):
    """A metadata document (or its URL) this server does not accept; the message says why."""


class ToCheckedAddress(HTTPAdapter):
    """requests' transport for one fetch: the URL names the checked address, TLS names the host.

    urllib3 sends `host` as the TLS server name (SNI) and verifies the certificate against it
    (`server_hostname`, `assert_hostname`), whatever address the connection went to.
    """

    def __init__(self, host: str) -> None:
        self.host = host
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        super().init_poolmanager(
            connections, maxsize, block, server_hostname=self.host, assert_hostname=self.host, **pool_kwargs
        )


def check_client_id(client_id: str) -> None:
    """Refuse a client_id that is not a metadata document's URL (the form allauth also requires)."""
    parts = urlsplit(client_id)
    problems = []
    if parts.scheme != "https" or not parts.hostname:
        problems.append("must be an https URL with a host")
    if parts.netloc != parts.netloc.lower():
        problems.append("its host must be lowercase")
    if not parts.path or parts.path == "/" or posixpath.normpath(parts.path) != parts.path:
        problems.append("must have a normalized path")
    if parts.query or parts.fragment or parts.username or parts.password:
        problems.append("may have no query, fragment or credentials")
    if len(client_id) > Client._meta.get_field("id").max_length:
        problems.append("is too long")
    if problems:
        raise DocumentRefused(f"the client_id {'; '.join(problems)}")


def fetch(client_id: str) -> dict:
    """Fetch the document at client_id from an address its host was checked to have; return its JSON.

    The checked addresses are tried in turn until one takes the connection, as a client given several
    addresses for a name does.
    """
    addresses = connections.checked_addresses(client_id)
    for address in addresses[:-1]:
        try:
            return _fetch_from(address, client_id)
        except requests.ConnectionError as exc:
            if isinstance(exc, requests.exceptions.SSLError):
                raise
    return _fetch_from(addresses[-1], client_id)


def _fetch_from(address: ipaddress.IPv4Address | ipaddress.IPv6Address, client_id: str) -> dict:
    parts = urlsplit(client_id)
    literal = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    target = urlunsplit(("https", f"{literal}:{parts.port or 443}", parts.path, "", ""))
    deadline = time.monotonic() + FETCH_SECONDS
    with requests.Session() as session:
        session.mount("https://", ToCheckedAddress(parts.hostname))
        response = session.get(
            target,
            headers={"Host": parts.netloc, "Accept": "application/json"},
            timeout=FETCH_SECONDS,
            stream=True,
            allow_redirects=False,
            # No proxy from the environment: it would resolve the name again.
            proxies={"http": None, "https": None},
        )
        with response:
            if response.status_code != 200:
                raise DocumentRefused(f"the document answered HTTP {response.status_code}")
            body = b""
            for chunk in response.iter_content(chunk_size=512):
                body += chunk
                if len(body) > MAX_BYTES:
                    raise DocumentRefused(f"the document is larger than {MAX_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise DocumentRefused(f"the document took longer than {FETCH_SECONDS} s")
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise DocumentRefused("the document is not JSON") from None
    if not isinstance(document, dict):
        raise DocumentRefused("the document is not a JSON object")
    return document


def _strings(document: dict, field: str, default: list[str] | None = None) -> list[str]:
    value = document.get(field, default)
    if not value or not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DocumentRefused(f"{field} must be a non-empty list of strings")
    return value


def apply_document(client: Client, document: dict) -> None:
    """Give client what its document says (connections.held_to_policy then keeps what it may have)."""
    if document.get("client_id") != client.id:
        raise DocumentRefused("the document's client_id is not its URL")
    scope, name = document.get("scope", "openid"), document.get("client_name", urlsplit(client.id).hostname)
    if not isinstance(scope, str) or not isinstance(name, str):
        raise DocumentRefused("scope and client_name must be strings")
    client.name = name[: Client._meta.get_field("name").max_length]
    client.type = Client.Type.PUBLIC
    client.set_scopes(scope.split())
    client.set_grant_types(_strings(document, "grant_types", ["authorization_code"]))
    client.set_redirect_uris(_strings(document, "redirect_uris"))
    client.set_response_types(_strings(document, "response_types", ["code"]))
    # A document holds RFC 7591 client metadata: what registration keeps is kept, and nothing else.
    known = {field: document[field] for field in (*TEXT_FIELDS, *LIST_FIELDS) if field in document}
    client.data = {"cimd": True, "client_metadata": known, "updated_at": int(time.time())}


def is_outdated(client: Client) -> bool:
    return time.time() - (client.data or {}).get("updated_at", 0) > settings.OAUTH_CLIENT_METADATA_CACHE_SECONDS


def within_fetch_rate(request: HttpRequest) -> bool:
    """Count a fetch against the caller's address; tell whether it is within OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE.

    The count is kept per minute in the shared cache, for the address allauth's account adapter gives
    (`get_client_ip`), an IPv6 one by its /64 network. allauth's own rate limiter leaves GET requests
    alone, and the authorization request that names a document is a GET.
    """
    address = get_account_adapter().get_client_ip(request) or ""
    try:
        if ipaddress.ip_address(address).version == 6:
            address = ipaddress.ip_network(f"{address}/64", strict=False).network_address
    except ValueError:
        pass  # no address known: such callers share one count
    key = f"accounts:metadata-fetches:{address}:{int(time.time() // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # the count expired between the two calls
        cache.add(key, 1, timeout=120)
        count = 1
    return count <= settings.OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE


def refresh(request: HttpRequest, client_id: str) -> None:
    """Make sure the client a metadata document names is stored and fresh, fetching it when it is not.

    A client_id that is no https URL is left alone (a registered client's). Nothing is raised: a document
    that cannot be fetched leaves the client as it was stored, or absent, and the request that named it
    is then refused as allauth refuses an unknown client.
    """
    if not settings.OAUTH_CLIENT_METADATA_DOCUMENTS or not client_id.startswith("https:") or text_problem(client_id):
        return
    stored = Client.objects.filter(id=client_id).first()
    if stored is not None and not is_outdated(stored):
        return
    try:
        check_client_id(client_id)
    except DocumentRefused as exc:
        log.warning("client metadata document %s not fetched: %s", client_id[:200], exc)
        return
    if not within_fetch_rate(request):
        log.warning("client metadata document %s: too many fetches from this address", client_id[:200])
        return
    lock = f"accounts.metadata-document:{client_id}"
    if not cache.add(lock, True, timeout=FETCH_SECONDS + 5):
        return  # another request is fetching it
    try:
        document = fetch(client_id)
        # A public client never shows a secret: an unusable one is stored, which costs no hashing.
        client = stored or Client(id=client_id, secret=make_password(None))
        apply_document(client, document)
    except (DocumentRefused, connections.AddressRefused, requests.RequestException) as exc:
        log.warning("client metadata document %s not fetched: %s", client_id[:200], exc)
        return
    finally:
        cache.delete(lock)
    try:
        with transaction.atomic():
            client.save()
    except IntegrityError:
        pass  # another process stored it first
