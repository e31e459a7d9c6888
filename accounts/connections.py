"""MCP clients a person connects by signing in: who may register, whose metadata may be fetched, and the
agents that act for people through them.

A client reaches this server in one of two ways the MCP authorization spec names: it registers itself
(RFC 7591 Dynamic Client Registration), or its `client_id` is the HTTPS URL of a Client ID Metadata
Document that the server fetches. allauth's authorization server does both; the policies here decide what
it accepts. Once a person consents, the client acts in their organization as an agent of its own
(`Agent.for_user`), named in run records as `<client> (agent, for <person>)`.
"""

from __future__ import annotations

import ipaddress
import socket
from datetime import timedelta
from urllib.parse import urlsplit

from allauth.idp.oidc.models import Client, Token
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from accounts.models import Agent, User
from base.names import name_problem
from base.storable import printable, text_problem, unstorable

# The one scope the tools need; agents' clients get it by default, and the metadata advertises it.
API_SCOPE = "agentprocess"
# Scopes a self-registered client may hold beside the tools' own: sign-in claims about the person.
IDENTITY_SCOPES = frozenset({"openid", "profile", "email"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# The grants a self-named client may hold: a person's sign-in, and refreshing what it gave.
SELF_NAMED_GRANTS = frozenset({Client.GrantType.AUTHORIZATION_CODE, Client.GrantType.REFRESH_TOKEN})
# How often a connected agent's `last_used_at` is written: once a minute at most, not once a call.
LAST_USED_PRECISION = timedelta(minutes=1)


def client_scopes(requested: list[str]) -> list[str]:
    """The scopes a self-registered client holds: the tools' scope, and any sign-in scopes it asked for."""
    return [API_SCOPE, *sorted(IDENTITY_SCOPES.intersection(requested))]


def redirect_uri_problem(uri: str) -> str | None:
    """Say why a self-registered client may not use this redirect URI, or None when it may.

    Only two kinds may receive an authorization code: an `https` address, or an `http` address on this
    machine's loopback interface (RFC 8252 §7.3), which a desktop or command-line client listens on.
    Neither may hold text a database cannot store.
    """
    if (problem := text_problem(uri)) is not None:
        return f"{printable(uri, 200)}: {problem}"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return f"{uri[:200]!r} is not a URL"
    if parts.fragment:
        return f"{uri[:200]!r} has a fragment (RFC 6749 §3.1.2)"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return None
    return f"{uri[:200]!r} is neither https nor http on a loopback address (127.0.0.1, [::1], localhost)"


def registration_problems(client: Client, metadata: dict) -> list[str]:
    """Every reason a dynamic registration is refused; empty when it may be saved."""
    # Text a database cannot store (NUL, lone surrogates) is refused here rather than failing the insert.
    problems = unstorable(metadata)
    if problems:
        return problems
    if client.type != Client.Type.PUBLIC:
        problems.append(
            "only public clients may register here (token_endpoint_auth_method \"none\", with PKCE); "
            "an agent with a secret of its own is added by an administrator"
        )
    extra_grants = set(client.get_grant_types()) - SELF_NAMED_GRANTS
    if extra_grants:
        problems.append(f"grant types {', '.join(sorted(extra_grants))} are not offered to registered clients")
    if set(client.get_response_types()) != {"code"}:
        problems.append('response_types must be ["code"]')
    problems += [p for p in map(redirect_uri_problem, client.get_redirect_uris()) if p]
    if problem := name_problem(client.name):
        problems.append(f"client_name {problem}")
    return problems


# Addresses that carry an IPv4 address in their last 32 bits: the well-known NAT64 prefix (RFC 6052), and
# the local-use one (RFC 8215), which is never global whatever it carries.
NAT64 = ipaddress.ip_network("64:ff9b::/96")
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


class AddressRefused(ValueError):
    """A metadata document's address this server must not fetch from; the message says why."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and reaches, if any.

    IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, RFC 4291 §2.5.5.1), NAT64
    (`64:ff9b::a.b.c.d`, RFC 6052) and 6to4 (`2002:aabb:ccdd::`, RFC 3056) addresses all lead to one.
    """
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if address in NAT64 or (value >> 32 == 0 and value > 1):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def ip_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Say why a metadata document may not be fetched from `address`, or None when it may."""
    if not address.is_global or address.is_multicast or address in LOCAL_NAT64:
        return f"a private or reserved address ({address})"
    inner = embedded_ipv4(address) if address.version == 6 else None
    if inner is not None and (not inner.is_global or inner.is_multicast):
        return f"a private or reserved address ({address}, which leads to {inner})"
    return None


def checked_addresses(url: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Resolve the host of url (a client's metadata document) once; return the addresses it may be fetched from.

    Every address the name resolves to must be public: a client must not be able to make this server read
    its own network (SSRF). The fetch then connects to one of these, never resolving the name again, so a
    name that answers differently the second time (DNS rebinding) changes nothing.
    OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES allows private and loopback addresses, for development and
    tests. Raises AddressRefused saying why not.
    """
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or 443
    except ValueError:
        raise AddressRefused("the client_id has a malformed port") from None
    if parts.scheme != "https" or not host:
        raise AddressRefused("the client_id must be an https URL")
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise AddressRefused(f"{host} does not resolve") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(sockaddr[0].split("%", 1)[0]) for *_, sockaddr in found))
    if not addresses:
        raise AddressRefused(f"{host} does not resolve")
    if not settings.OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES:
        for address in addresses:
            if (problem := ip_problem(address)) is not None:
                raise AddressRefused(f"{host} resolves to {problem}")
    return addresses


def address_problem(url: str) -> str | None:
    """Say why the server must not fetch url (a client's metadata document), or None when it may."""
    try:
        checked_addresses(url)
    except AddressRefused as refused:
        return str(refused)
    return None


def metadata_host(client: Client) -> str | None:
    """The host of the metadata document a client's id names, or None for a client with a plain id."""
    return urlsplit(client.id).hostname if client.id.startswith("https:") else None


def display_name(client: Client) -> str:
    """The name a client gave itself (unverified) when it is one people may read, else its metadata
    URL's host, else its id."""
    if client.name and name_problem(client.name) is None:
        return client.name
    return metadata_host(client) or client.id


def logo_uri(client: Client) -> str | None:
    """The https logo a self-registered client named, if any (shown as unverified)."""
    logo = ((client.data or {}).get("client_metadata") or {}).get("logo_uri")
    if isinstance(logo, str) and logo.startswith("https://") and len(logo) <= 2000:
        return logo
    return None


def is_self_registered(client: Client) -> bool:
    """Tell whether a client named itself (DCR or a metadata document), so nothing it says is verified."""
    data = client.data or {}
    return bool(data.get("dcr") or data.get("cimd"))


def connect(user: User, client: Client) -> Agent:
    """Return the agent through which client acts for user, making (or reactivating) it."""
    organization_id = user.membership.organization_id
    name = display_name(client)[: Agent._meta.get_field("name").max_length]
    agent = Agent.objects.filter(for_user=user, connected_client_id=client.id).first()
    if agent is None:
        try:
            with transaction.atomic():
                return Agent.objects.create(
                    organization_id=organization_id, name=name, for_user=user, connected_client_id=client.id
                )
        except IntegrityError:
            # The same person's two first calls at once: the other made it.
            agent = Agent.objects.get(for_user=user, connected_client_id=client.id)
    changed = {"is_active": True, "name": name, "organization_id": organization_id}
    if any(getattr(agent, field) != value for field, value in changed.items()):
        for field, value in changed.items():
            setattr(agent, field, value)
        agent.save(update_fields=list(changed))
    return agent


def disconnect(agent: Agent) -> None:
    """Revoke a connected agent: its tokens go at once, so its next call is 401, and it stays off."""
    with transaction.atomic():
        Token.objects.filter(client_id=agent.connected_client_id, user_id=agent.for_user_id).delete()
        Agent.objects.filter(pk=agent.pk).update(is_active=False)
    agent.is_active = False


def note_use(agent: Agent) -> None:
    """Record that agent called the server now, writing at most once per LAST_USED_PRECISION."""
    now = timezone.now()
    if agent.last_used_at is None or now - agent.last_used_at >= LAST_USED_PRECISION:
        Agent.objects.filter(pk=agent.pk).update(last_used_at=now)
        agent.last_used_at = now


def forget_unused_clients(now=None) -> int:
    """Delete self-registered clients nobody consented to within OAUTH_UNUSED_CLIENT_SECONDS; return how many.

    A registration costs its client nothing, so unused ones would pile up; a client a person has
    connected stays (their agent record names it), and one fetched from its metadata document comes
    back on its next authorization.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.OAUTH_UNUSED_CLIENT_SECONDS)
    connected = Agent.objects.filter(connected_client_id=OuterRef("id"))
    stale = Client.objects.filter(created_at__lt=cutoff).filter(
        Q(data__dcr=True) | Q(data__cimd=True)
    ).exclude(Exists(connected))
    deleted, _ = stale.delete()
    return deleted


def forget_unused_registrations(*, keep: int) -> int:
    """Delete the oldest self-registered clients never used, past the newest `keep` of them; return how many.

    Never used: no person connected it and it holds no token, not even an authorization code, so a client
    in the middle of its first sign-in is not one of them.
    """
    connected = Agent.objects.filter(connected_client_id=OuterRef("id"))
    tokens = Token.objects.filter(client_id=OuterRef("id"))
    unused = Client.objects.filter(data__dcr=True).exclude(Exists(connected)).exclude(Exists(tokens))
    surplus = list(unused.order_by("-created_at", "-id").values_list("id", flat=True)[keep:])
    if not surplus:
        return 0
    Client.objects.filter(id__in=surplus).delete()
    return len(surplus)


def held_to_policy(sender, instance: Client, **kwargs) -> None:
    """Before a client from a metadata document is saved, keep only what a self-named client may have.

    It is public; its grants are the authorization code and refresh; it holds the tools' scope (and any
    sign-in scopes it named); a redirect URI that is neither https nor loopback is dropped, so an
    authorization that names one is refused as an unregistered redirect.
    """
    if not (instance.data or {}).get("cimd"):
        return
    instance.type = Client.Type.PUBLIC
    instance.skip_consent = False
    grants = [g for g in instance.get_grant_types() if g in SELF_NAMED_GRANTS]
    instance.set_grant_types(grants or [Client.GrantType.AUTHORIZATION_CODE])
    instance.set_response_types(["code"])
    instance.set_redirect_uris([u for u in instance.get_redirect_uris() if redirect_uri_problem(u) is None])
    if text_problem(instance.name) or name_problem(instance.name):
        instance.name = metadata_host(instance) or ""
    instance.data = {**instance.data, "client_metadata": {}} if unstorable(instance.data) else instance.data
    instance.set_scopes(client_scopes(instance.get_scopes()))
    instance.set_default_scopes([API_SCOPE])
