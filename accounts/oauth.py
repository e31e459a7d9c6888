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
from django.db import IntegrityError, transaction
from django.db.models import Case, OuterRef, Q, Subquery, When
from django.http import HttpRequest
from django.urls import get_script_prefix
from django.utils import timezone

from accounts import connections, token_memo
from accounts.connections import API_SCOPE
from accounts.identity import AGENT, Identity
from accounts.models import Agent, Membership, Organization, User

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


def _fields(model) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


@functools.cache
def _tokens():
    """Access tokens with their person, membership and organization, and their agent and its organization.

    One statement: the person's rows are joined, the agent's and its organization's columns are read by
    subqueries (an agent is not a relation of allauth's Token); `_from_token` builds them back.
    """
    # A token naming no person acts through the administrator's agent owning its client; a token naming a
    # person, through the agent that person connected with that client. Each is found by a unique index.
    own = Agent.objects.filter(for_user__isnull=True, client_id=OuterRef("client_id")).order_by()
    connected = Agent.objects.filter(for_user=OuterRef("user"), connected_client_id=OuterRef("client_id")).order_by()
    # A connected agent is in its person's organization (their membership's); an administrator's names its own.
    organization = Organization.objects.filter(
        agents__for_user__isnull=True, agents__client_id=OuterRef("client_id")
    ).order_by()
    columns = {
        f"agent_{name}": Case(When(user__isnull=True, then=Subquery(own.values(name)[:1])),
                              default=Subquery(connected.values(name)[:1]))
        for name in _fields(Agent)
    }
    columns |= {
        f"own_organization_{name}": Case(When(user__isnull=True, then=Subquery(organization.values(name)[:1])))
        for name in _fields(Organization)
    }
    return (Token.objects.filter(type=Token.Type.ACCESS_TOKEN).select_related("user__membership__organization")
            .annotate(**columns))


def _from_token(token: Token, model, prefix: str):
    """The `model` instance whose columns `_tokens` read under `prefix`, or None when there was none."""
    names = _fields(model)
    values = [getattr(token, prefix + name) for name in names]
    if values[names.index(model._meta.pk.attname)] is None:
        return None
    return model.from_db(token._state.db, names, values)


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
    """Look the token up with its caller and organization (one query); None when it cannot call."""
    now = timezone.now()
    token = (_tokens().filter(hash=token_hash).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
             .first())
    if token is None or token.client_id is None:
        return None
    user, agent = token.user, _from_token(token, Agent, "agent_")
    if user is not None:
        identity = _connected_identity(token.client_id, agent, user, getattr(user, "membership", None))
    elif agent is not None and agent.is_active:
        agent.organization = _from_token(token, Organization, "own_organization_")
        identity = Identity.for_agent(agent)
    else:
        return None
    if identity is None:
        return None
    return token_memo.Validated(
        identity=identity,
        resources=tuple(token.get_resources()),
        scoped=API_SCOPE in token.get_scopes(),
        seconds_left=None if token.expires_at is None else (token.expires_at - now).total_seconds(),
    )
