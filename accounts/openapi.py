"""How the OpenAPI schema describes this server's two ways to authenticate."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "oauth2Bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An OAuth 2.1 access token from /identity/o/api/token (client credentials).",
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.SameOriginSessionAuthentication"
    name = "browserSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "A signed-in person (CSRF)."}
