"""Who is calling the API: an OAuth bearer token (always an agent client) or a person's browser session."""

from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission

from accounts.identity import Identity
from accounts.oauth import InsufficientScope, absolute_url, identity_for_token, scope_challenge

REALM = "agentprocess"


class ScopeDenied(PermissionDenied):
    """A token without the tools' scope: 403 with the RFC 6750 §3.1 challenge in `challenge`."""

    default_detail = "The bearer token was not granted the agentprocess scope; ask for it when getting a token."

    def __init__(self):
        super().__init__()
        self.challenge = scope_challenge(realm=REALM)


class BearerTokenAuthentication(BaseAuthentication):
    """Authenticate `Authorization: Bearer <token>` with an access token from our authorization server."""

    def authenticate(self, request):
        scheme, _, raw_token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            # Not ours: let the session (or nothing) decide.
            return None
        raw_token = raw_token.strip()
        if not raw_token:
            raise AuthenticationFailed("The bearer token is missing.")
        # The token must be good for the URL being called (RFC 8707), as the protected resource sees it.
        try:
            identity = identity_for_token(raw_token, resource=lambda: absolute_url(request, request.path_info))
        except InsufficientScope:
            raise ScopeDenied() from None
        if identity is None:
            raise AuthenticationFailed("The bearer token is invalid, expired or revoked.")
        return identity.user, identity

    def authenticate_header(self, request):
        return f'Bearer realm="{REALM}"'


class SameOriginSessionAuthentication(SessionAuthentication):
    """Authenticate a signed-in person's browser session, CSRF-checked, as their human identity."""

    def authenticate(self, request):
        # DRF's own session check: the signed-in, active user, CSRF enforced (Django's check also
        # refuses an Origin header that is not this site or a trusted origin).
        found = super().authenticate(request)
        if found is None:
            return None
        user, _ = found
        identity = Identity.for_user(user)
        if identity is None:
            raise AuthenticationFailed(
                "You are signed in but belong to no organization; ask an administrator."
            )
        return user, identity


class HasIdentity(BasePermission):
    """Allow a request only when an authentication class above identified the caller."""

    def has_permission(self, request, view):
        return isinstance(request.auth, Identity)
