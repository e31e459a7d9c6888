"""Where the authorization server may send a person's browser: a client's exact redirect URIs, and after
signing out only back to an address the client registered for that, for the person it signed in.

allauth matches a redirect URI more loosely than OAuth 2.1 allows (extra query parameters pass, a
fragment is ignored, a registered URI's host is enough after logout), so every request that names one is
held to these rules first (RFC 9700 §4.1.3, MCP authorization: exact string comparison; only a loopback
redirect URI may change its port, RFC 8252 §7.3).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.forms import RPInitiatedLogoutForm
from django.http import HttpRequest, QueryDict

from accounts.connections import LOOPBACK_HOSTS


def _without_port(parts: SplitResult) -> tuple[str, ...]:
    """The URI's parts as written, its port left out of the authority."""
    netloc = parts.netloc
    if parts.port is not None:
        netloc = netloc[: netloc.rfind(":")]
    return parts.scheme, netloc, parts.path, parts.query, parts.fragment


def _loopback(parts: SplitResult) -> bool:
    return parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


def redirect_uri_matches(uri: str, registered: Iterable[str]) -> bool:
    """Tell whether uri is one of the registered redirect URIs, string for string.

    The one allowance is RFC 8252 §7.3's: a registered `http` URI on a loopback address (127.0.0.1, [::1],
    localhost) matches the same URI on any port, since a native client listens on whatever port is free.
    (allauth's own check, which runs after this one, still holds `localhost` to its registered port.)
    """
    registered = list(registered)
    if uri in registered:
        return True
    try:
        parts = urlsplit(uri)
        if not _loopback(parts):
            return False
        wanted = _without_port(parts)
        for candidate in registered:
            other = urlsplit(candidate)
            if _loopback(other) and _without_port(other) == wanted:
                return True
    except ValueError:  # a malformed port or address
        return False
    return False


def post_logout_redirect_uri(request: HttpRequest, params: QueryDict) -> str | None:
    """The address a logout request may send the browser back to, or None when it must stay here.

    Only a signed-in person is ever sent away, and only when the request carries an ID token this server
    signed for that person and that client (`id_token_hint`), and names exactly a
    `post_logout_redirect_uris` entry the client registered. Anyone can register a client, so a URI that
    is merely registered proves nothing about who sent the visitor (OpenID Connect RP-Initiated Logout
    §2: no redirection without an id_token_hint unless the server has other means).
    """
    uri = params.get("post_logout_redirect_uri")
    if not uri or not request.user.is_authenticated or not params.get("id_token_hint"):
        return None
    form = RPInitiatedLogoutForm(params)
    if not form.is_valid():
        return None
    client, hint = form.cleaned_data.get("client"), form.cleaned_data.get("id_token_hint")
    if client is None or not isinstance(hint, dict):
        return None
    audience = hint.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if client.id not in audiences or hint.get("sub") != get_adapter().get_user_sub(client, request.user):
        return None
    return uri if uri in client.get_post_logout_redirect_uris() else None
