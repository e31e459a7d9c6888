"""How the OpenAPI schema describes this server's two ways to authenticate."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from accounts.connections import API_SCOPE


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "oauth2"

    def get_security_definition(self, auto_schema):
        # An OAuth2 scheme, so the documentation page's Authorize button can get a token itself from an
        # agent's client id and secret (client credentials), then send it as `Authorization: Bearer`.
        return {
            "type": "oauth2",
            "description": (
                "An OAuth 2.1 access token from this server's authorization server: an agent's client "
                "credentials (made with `add_agent` or in the admin), or an MCP client a person connected "
                "by signing in (authorization code with PKCE)."
            ),
            "flows": {
                "clientCredentials": {
                    "tokenUrl": "/identity/o/api/token",
                    "scopes": {API_SCOPE: "Call the agentprocess tools."},
                },
                "authorizationCode": {
                    "authorizationUrl": "/identity/o/authorize",
                    "tokenUrl": "/identity/o/api/token",
                    "refreshUrl": "/identity/o/api/token",
                    "scopes": {API_SCOPE: "Call the agentprocess tools."},
                },
            },
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.SameOriginSessionAuthentication"
    name = "browserSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "A signed-in person (CSRF)."}
