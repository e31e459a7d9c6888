"""Agents' OAuth clients and the bearer tokens they call the API with (allauth.idp.oidc underneath)."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from allauth.idp.oidc.adapter import DefaultOIDCAdapter, get_adapter
from allauth.idp.oidc.models import Client, Token
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.http import HttpRequest
from django.urls import get_script_prefix
from django.utils import timezone

from accounts import connections, token_memo
from accounts.connections import API_SCOPE
from accounts.identity import AGENT, Identity
from accounts.models import Agent, Membership, Organization, User
from base import backend, sql

MCP_PATH = "/mcp"


class AgentNameTaken(ValueError):
    """An agent of that name already exists in the organization."""


class InsufficientScope(Exception):
    """A valid token that was not granted the scope the tools need (RFC 6750 §3.1: 403, insufficient_scope)."""


def scope_challenge(**extra: str) -> str:
    """The WWW-Authenticate value for a token without the tools' scope; `extra` adds parameters."""
    parts = ['error="insufficient_scope"', f'scope="{API_SCOPE}"']
    parts += [f'{name}="{value}"' for name, value in extra.items()]
    return "Bearer " + ", ".join(parts)


def _request_base_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(get_script_prefix()).rstrip("/")


def server_base_url(request: HttpRequest | None) -> str:
    """Return the server's absolute base URL, without a trailing slash: PUBLIC_URL, else the request's."""
    if settings.PUBLIC_URL:
        return settings.PUBLIC_URL.rstrip("/")
    if request is None:
        return ""
    return _request_base_url(request)


def absolute_url(request: HttpRequest | None, path: str) -> str:
    """Return the absolute URL of path, a path inside this server (no script prefix)."""
    return server_base_url(request) + path


def protected_resource_metadata_url(request: HttpRequest | None, resource_path: str = "") -> str:
    """Return the URL of the RFC 9728 document for the resource at resource_path (root form when empty)."""
    return absolute_url(request, "/.well-known/oauth-protected-resource" + resource_path)


def issuer() -> str:
    """Return the authorization server's issuer identifier."""
    return get_adapter().get_issuer()


class OIDCAdapter(DefaultOIDCAdapter):
    """allauth's adapter, made to name this server by PUBLIC_URL and to hand out URL-safe secrets."""

    def get_issuer(self) -> str:
        return server_base_url(self.request)

    def generate_client_secret(self) -> str:
        # The default alphabet has characters such as '%' and '+' that clients which form-encode
        # client_secret_basic credentials (RFC 6749 §2.3.1) would alter; allauth does not decode them.
        return secrets.token_urlsafe(48)

    def populate_server_metadata(self, data: dict) -> None:
        request = self.request
        if request is not None and settings.PUBLIC_URL:
            # allauth builds its endpoint URLs from the request; behind a proxy they must be the public ones.
            local, public = _request_base_url(request), server_base_url(request)
            for key, value in data.items():
                if isinstance(value, str) and (value == local or value.startswith(local + "/")):
                    data[key] = public + value[len(local) :]
        data["issuer"] = self.get_issuer()
        scopes = list(data.get("scopes_supported") or [])
        if API_SCOPE not in scopes:
            scopes.append(API_SCOPE)
        data["scopes_supported"] = scopes
        # What MCP clients look for (MCP authorization, 2026-07-28): PKCE with S256 only (allauth refuses
        # `plain`), public clients without a secret, and a URL as client_id naming a metadata document.
        data["client_id_metadata_document_supported"] = settings.OAUTH_CLIENT_METADATA_DOCUMENTS
        data["revocation_endpoint_auth_methods_supported"] = ["client_secret_basic", "client_secret_post", "none"]

    def validate_client_registration(self, *, client: Client, client_metadata: dict, **kwargs) -> None:
        problems = connections.registration_problems(client, client_metadata)
        if problems:
            raise ValidationError("; ".join(problems))
        client.set_scopes(connections.client_scopes(client.get_scopes()))
        client.set_default_scopes([API_SCOPE])


def _agent_client(organization: Organization, name: str) -> tuple[Client, str]:
    """A new (unsaved) confidential client-credentials client for an agent, and its secret."""
    secret = get_adapter().generate_client_secret()
    client = Client(
        name=f"{organization.slug}/{name}"[:100],
        # Passing the hash here keeps Client's default from hashing a throwaway secret (slow on purpose).
        secret=make_password(secret),
        type=Client.Type.CONFIDENTIAL,
        skip_consent=False,
    )
    # Client credentials only: no redirect URIs, response types or refresh tokens, so nothing here can
    # ever act for a person.
    client.set_grant_types([Client.GrantType.CLIENT_CREDENTIALS])
    client.set_response_types([])
    client.set_redirect_uris([])
    client.set_scopes([API_SCOPE])
    client.set_default_scopes([API_SCOPE])
    return client, secret


def name_taken(organization: Organization, name: str) -> bool:
    """Tell whether one of the organization's own agents (not one a person connected) has this name."""
    return Agent.objects.filter(organization=organization, name=name, for_user__isnull=True).exists()


def save_new_agent(agent: Agent) -> str:
    """Save a new agent with a client-credentials client of its own; return the secret (shown only once)."""
    client, secret = _agent_client(agent.organization, agent.name)
    try:
        with transaction.atomic():
            client.save(force_insert=True)
            agent.client_id = client.id
            agent.save(force_insert=True)
    except IntegrityError as exc:
        # Another process created the same name between the caller's check and the insert.
        agent.client_id = None
        if name_taken(agent.organization, agent.name):
            raise AgentNameTaken(agent.name) from exc
        raise
    return secret


def create_agent(*, organization: Organization, name: str) -> tuple[Agent, str, str]:
    """Create an agent and its confidential client-credentials client; return (agent, client_id, secret)."""
    if name_taken(organization, name):
        raise AgentNameTaken(name)
    agent = Agent(organization=organization, name=name)
    secret = save_new_agent(agent)
    return agent, agent.client_id, secret


def new_secret(agent: Agent) -> str:
    """Give an administrator's agent a new client secret and end its tokens; return the secret (shown once).

    The old secret stops working at once, and so does every token got with it.
    """
    if agent.client_id is None:
        raise ValueError(f"agent {agent.pk} has no client of its own (a person connected it)")
    secret = get_adapter().generate_client_secret()
    with transaction.atomic():
        Client.objects.filter(pk=agent.client_id).update(secret=make_password(secret))
        Token.objects.filter(client_id=agent.client_id).delete()
    return secret


def _covers(granted: str, expected: str) -> bool:
    """Tell whether the resource a token was issued for includes the expected resource URL."""
    g, e = urlsplit(granted), urlsplit(expected)
    if (g.scheme.lower(), g.netloc.lower()) != (e.scheme.lower(), e.netloc.lower()):
        return False
    prefix = g.path.rstrip("/")
    return e.path.rstrip("/") == prefix or e.path.startswith(prefix + "/")


@functools.cache
def _token_sql() -> str:
    quote = backend.quote_name
    agents = quote(Agent._meta.db_table)
    # `a` is an administrator's agent (its own client, no person); `c` the agent a person connected
    # through this client. At most one of the two is there, and each is found by a unique index.
    return (
        f"SELECT t.client_id, t.data, t.scopes, t.expires_at, {sql.columns(Agent, 'a')}, {sql.columns(Agent, 'c')}, "
        f"{sql.columns(User, 'u')}, {sql.columns(Membership, 'm')}, {sql.columns(Organization, 'o')} "
        f"FROM {quote(Token._meta.db_table)} t "
        f"LEFT JOIN {agents} a ON t.user_id IS NULL AND a.client_id = t.client_id "
        f"LEFT JOIN {agents} c ON c.for_user_id = t.user_id AND c.connected_client_id = t.client_id "
        f"LEFT JOIN {quote(User._meta.db_table)} u ON u.id = t.user_id "
        f"LEFT JOIN {quote(Membership._meta.db_table)} m ON m.user_id = u.id "
        f"LEFT JOIN {quote(Organization._meta.db_table)} o ON o.id = COALESCE(a.organization_id, m.organization_id) "
        "WHERE t.type = %s AND t.hash = %s AND (t.expires_at IS NULL OR t.expires_at > %s)"
    )


def _split(row, *models):
    """Cut a row of consecutive `sql.columns` blocks into one instance (or None) per model."""
    out, at = [], 0
    for model in models:
        width = len(model._meta.concrete_fields)
        out.append(sql.build(model, row[at:at + width]))
        at += width
    return out


def _connected_identity(client_id: str, agent: Agent | None, user: User, membership: Membership | None):
    """The identity of the agent a person connected, or None when it or they may no longer call."""
    if not user.is_active or membership is None:
        return None  # a person who left (or was never in) an organization acts through nobody
    if agent is None:
        # A token issued before its agent was recorded (the device flow, say): record it now.
        client = Client.objects.filter(pk=client_id).first()
        if client is None:
            return None
        user.membership = membership
        agent = connections.connect(user, client)
    elif not agent.is_active or agent.organization_id != membership.organization_id:
        return None  # revoked, or the person moved to another organization
    agent.organization = membership.organization
    agent.for_user = user
    return Identity(
        organization=membership.organization, kind=AGENT, ref=agent.ref, user=user, agent=agent, via_client=True
    )


def identity_for_token(raw_token: str, *, resource: str | Callable[[], str] | None = None) -> Identity | None:
    """Return the identity an access token stands for, or None when it is unknown, expired or unusable.

    `resource` is the URL being called, or a function returning it; a function is called only for a
    token that names resources, so most calls never work the URL out. A token good for that URL but not
    granted the tools' scope raises InsufficientScope.
    """
    if not raw_token:
        return None
    token_hash = get_adapter().hash_token(raw_token)
    validated = token_memo.recall(token_hash)
    if validated is None:
        validated = _validate(token_hash)
        if validated is None:
            return None
        token_memo.remember(token_hash, validated)
    # `resource` is the URL being called: a token issued for named resources (RFC 8707) is good only
    # where one of them is, or contains, that URL; a token that names none is good anywhere here.
    if resource is not None and validated.resources:
        if callable(resource):
            resource = resource()
        if not any(_covers(g, resource) for g in validated.resources):
            return None
    if not validated.scoped:
        raise InsufficientScope()
    connections.note_use(validated.identity.agent)
    return validated.identity


def _validate(token_hash: str) -> token_memo.Validated | None:
    """Look the token up with its caller and organization (one plain-SQL join); None when it cannot call."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(_token_sql(), [Token.Type.ACCESS_TOKEN, token_hash, now])
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    agent, connected, user, membership, organization = _split(row[4:], Agent, Agent, User, Membership, Organization)
    if user is not None:
        if membership is not None:
            membership.organization = organization
        identity = _connected_identity(row[0], connected, user, membership)
    elif agent is not None and agent.is_active:
        agent.organization = organization
        identity = Identity.for_agent(agent)
    else:
        return None
    if identity is None:
        return None
    expires_at = sql.field_value(Token, "expires_at", row[3])
    return token_memo.Validated(
        identity=identity,
        resources=tuple(Token(data=sql.field_value(Token, "data", row[1])).get_resources()),
        scoped=API_SCOPE in Token(scopes=row[2]).get_scopes(),
        seconds_left=None if expires_at is None else (expires_at - now).total_seconds(),
    )
