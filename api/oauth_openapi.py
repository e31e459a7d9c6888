"""The OpenAPI description of the authorization server's own endpoints agents call: dynamic client
registration (RFC 7591), the token endpoint (RFC 6749 §3.2) and revocation (RFC 7009), so the API docs
show them and schemathesis exercises them beside the tools."""

from __future__ import annotations

import copy

from django.conf import settings

OAUTH_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}},
}
STRINGS = {"type": "array", "items": {"type": "string"}}


def _error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}}}


def _form(properties: dict, required: list[str]) -> dict:
    return {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": {
        "type": "object", "required": required, "properties": properties}}}}


def oauth_paths() -> dict:
    text = {"type": "string", "maxLength": settings.OAUTH_REGISTRATION_MAX_CHARS}
    uris = {"type": "array", "maxItems": settings.OAUTH_REGISTRATION_MAX_URIS, "items": text}
    metadata = {
        "type": "object",
        "description": "RFC 7591 §2 client metadata; fields this server does not use are ignored.",
        "properties": {
            "redirect_uris": uris,
            "post_logout_redirect_uris": uris,
            "client_name": text,
            "token_endpoint_auth_method": text,
            "grant_types": uris,
            "response_types": uris,
            "scope": text,
            "contacts": uris,
            **{name: text for name in ("logo_uri", "client_uri", "tos_uri", "policy_uri", "software_id",
                                       "software_version")},
        },
    }
    registered = {
        "type": "object",
        "required": ["client_id", "redirect_uris"],
        "properties": {"client_id": {"type": "string"}, "client_id_issued_at": {"type": "integer"},
                       "client_name": {"type": "string"}, "redirect_uris": STRINGS},
    }
    token = {
        "type": "object",
        "required": ["access_token", "token_type"],
        "properties": {"access_token": {"type": "string"}, "token_type": {"type": "string"},
                       "expires_in": {"type": "integer"}, "refresh_token": {"type": "string"},
                       "scope": {"type": "string"}, "id_token": {"type": "string"}},
    }
    public = {"tags": ["oauth"], "security": [{}]}
    return {
        "/identity/o/api/clients": {"post": {
            **public,
            "operationId": "register_client",
            "summary": "Register a public client (RFC 7591): rate-limited and capped before any work.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": metadata}}},
            "responses": {
                "201": {"description": "registered",
                        "content": {"application/json": {"schema": registered}}},
                "400": _error("invalid_client_metadata or invalid_redirect_uri, naming every problem"),
                "404": _error("dynamic registration is off"),
                "413": _error("the body is larger than OAUTH_REGISTRATION_MAX_BYTES"),
                "429": _error("too many registrations from this address"),
            },
        }},
        "/identity/o/api/token": {"post": {
            **public,
            "operationId": "token",
            "summary": "Exchange a grant for an access token (client credentials, authorization code, refresh token).",
            "requestBody": _form({
                "grant_type": {"type": "string"},
                **{name: {"type": "string"} for name in (
                    "client_id", "client_secret", "code", "redirect_uri", "code_verifier", "refresh_token",
                    "scope", "resource", "device_code")},
            }, ["grant_type"]),
            "responses": {
                "200": {"description": "a token", "content": {"application/json": {"schema": token}}},
                "400": _error("invalid_request, invalid_grant, unsupported_grant_type, invalid_scope, ..."),
                "401": _error("invalid_client"),
                "429": _error("too many requests from this address"),
            },
        }},
        "/identity/o/api/revoke": {"post": {
            **public,
            "operationId": "revoke",
            "summary": "Revoke an access or refresh token (RFC 7009).",
            "requestBody": _form({"token": {"type": "string"}, "token_type_hint": {"type": "string"},
                                  "client_id": {"type": "string"}, "client_secret": {"type": "string"}},
                                 ["token"]),
            "responses": {
                "200": {"description": "revoked, or no such token (RFC 7009 §2.2)"},
                "400": _error("invalid_request"),
                "401": _error("invalid_client"),
                "429": _error("too many requests from this address"),
            },
        }},
    }


def add_oauth_paths(result, generator, request, public):
    """drf-spectacular postprocessing hook: add the authorization server's endpoints agents call."""
    result.setdefault("paths", {}).update(copy.deepcopy(oauth_paths()))
    result.setdefault("components", {}).setdefault("schemas", {})["OAuthError"] = copy.deepcopy(OAUTH_ERROR)
    return result
