from django.urls import include, path

from accounts import registration, views
from accounts.oauth import MCP_PATH

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        views.authorization_server_metadata,
        name="oauth-authorization-server",
    ),
    path(
        ".well-known/oauth-protected-resource",
        views.protected_resource_metadata,
        name="oauth-protected-resource",
    ),
    # RFC 9728 §3.1: the well-known segment goes before the resource's path.
    path(
        f".well-known/oauth-protected-resource{MCP_PATH}",
        views.protected_resource_metadata,
        {"resource_path": MCP_PATH},
        name="oauth-protected-resource-mcp",
    ),
    # allauth's authorization endpoint with this server's consent page, and the agents people connected.
    path("identity/o/authorize", views.authorize, name="authorize"),
    path("accounts/agents/", views.connected_agents, name="connected-agents"),
    path("accounts/settings/", views.preferences, name="preferences"),
    # allauth's own views, answering a malformed `resource` parameter with invalid_target (RFC 8707).
    path("identity/o/api/token", views.token, name="token"),
    path("identity/o/api/device/code", views.device_code, name="device-code"),
    path("identity/o/api/revoke", views.revoke, name="revoke"),
    # allauth's RP-initiated logout, sending the browser back only to an exactly registered address.
    path("identity/o/logout", views.logout, name="oidc-logout"),
    # Dynamic client registration, rate-limited and capped before it costs anything (accounts/registration.py).
    path("identity/o/api/clients", registration.client_registration, name="client-registration"),
    # allauth's OpenID provider: /.well-known/openid-configuration, /.well-known/jwks.json, /identity/o/...
    path("", include("allauth.idp.urls")),
]
