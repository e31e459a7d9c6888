"""Bearer tokens for agents: found from the server's URL alone (RFC 9728, then RFC 8414) or given ready."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from .web import Session

TIMEOUT = 30
CHALLENGE_PARAMETER = re.compile(r'(\w+)="([^"]*)"')


class AuthorizationProblem(Exception):
    """The server's metadata or token endpoint did not give what RFC 9728, RFC 8414 or RFC 6749 promise."""


@dataclass
class Discovery:
    """What a client learns about a protected resource before asking for a token."""

    resource: str
    challenge: dict[str, str] = field(default_factory=dict)
    resource_metadata_url: str | None = None
    resource_metadata: dict = field(default_factory=dict)
    authorization_server: str | None = None
    authorization_server_metadata: dict = field(default_factory=dict)

    @property
    def token_endpoint(self) -> str:
        endpoint = self.authorization_server_metadata.get("token_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise AuthorizationProblem(f"the authorization server metadata of {self.authorization_server} has no token_endpoint")
        return endpoint

    @property
    def scope(self) -> str | None:
        if self.challenge.get("scope"):
            return self.challenge["scope"]
        scopes = self.resource_metadata.get("scopes_supported")
        return " ".join(scopes) if isinstance(scopes, list) and scopes else None


def parse_challenge(header: str) -> dict[str, str]:
    """Return the parameters of a `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3)."""
    if not header.lower().startswith("bearer"):
        return {}
    return dict(CHALLENGE_PARAMETER.findall(header))


def well_known(url: str, suffix: str) -> str:
    """Insert /.well-known/<suffix> before the path of url (RFC 8414 §3.1, RFC 9728 §3.1)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{suffix}{path}", "", ""))


def discover(session: Session, resource: str) -> Discovery:
    """Find the token endpoint of the resource: the 401 challenge, its RFC 9728 document, then RFC 8414."""
    found = Discovery(resource=resource)
    probe = session.post(resource, json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, timeout=TIMEOUT,
                         headers={"Accept": "application/json, text/event-stream"})
    if probe.status_code == 401:
        found.challenge = parse_challenge(probe.headers.get("WWW-Authenticate", ""))
    candidates = [found.challenge["resource_metadata"]] if found.challenge.get("resource_metadata") else []
    candidates += [well_known(resource, "oauth-protected-resource"),
                   well_known(_origin(resource), "oauth-protected-resource")]
    for url in candidates:
        answer = session.get(url, timeout=TIMEOUT)
        if answer.status_code == 200:
            found.resource_metadata_url, found.resource_metadata = url, answer.json()
            break
    else:
        raise AuthorizationProblem(f"no protected-resource metadata (RFC 9728) for {resource}; tried {', '.join(candidates)}")
    servers = found.resource_metadata.get("authorization_servers")
    if not isinstance(servers, list) or not servers:
        raise AuthorizationProblem(f"{found.resource_metadata_url} names no authorization_servers")
    found.authorization_server = servers[0]
    for suffix in ("oauth-authorization-server", "openid-configuration"):
        answer = session.get(well_known(found.authorization_server, suffix), timeout=TIMEOUT)
        if answer.status_code == 200:
            found.authorization_server_metadata = answer.json()
            break
    else:
        raise AuthorizationProblem(f"no authorization server metadata (RFC 8414) for {found.authorization_server}")
    return found


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


@dataclass
class ClientCredentials:
    """An agent's OAuth client: each token comes from the client-credentials grant (RFC 6749 §4.4)."""

    client_id: str
    client_secret: str
    scope: str | None = None

    def token(self, session: Session, discovery: Discovery, *, resource: str | None) -> str:
        data = {"grant_type": "client_credentials"}
        scope = self.scope or discovery.scope
        if scope:
            data["scope"] = scope
        if resource:
            data["resource"] = resource  # RFC 8707: a token for this resource only
        answer = session.post(discovery.token_endpoint, data=data, auth=(self.client_id, self.client_secret),
                              timeout=TIMEOUT)
        if answer.status_code != 200 and resource:
            # A server that does not take resource indicators still gives a token without one.
            return self.token(session, discovery, resource=None)
        if answer.status_code != 200:
            raise AuthorizationProblem(f"the token endpoint answered {answer.status_code}: {answer.text[:300]}")
        token = answer.json().get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthorizationProblem("the token endpoint's answer has no access_token")
        return token


@dataclass
class BearerToken:
    """A ready token, used as given."""

    value: str

    def token(self, session: Session, discovery: Discovery | None, *, resource: str | None) -> str:
        return self.value
