"""OAuth discovery documents: authorization server (RFC 8414) and protected resource (RFC 9728)."""

import functools
import json

from allauth.idp.oidc import views as oidc_views
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from accounts.oauth import API_SCOPE, absolute_url, issuer


def _public(response: JsonResponse) -> JsonResponse:
    # Browser-based clients read discovery documents cross-origin; they hold nothing secret.
    response["Access-Control-Allow-Origin"] = "*"
    response["Cache-Control"] = "max-age=3600"
    return response


@login_not_required
@require_safe
def authorization_server_metadata(request: HttpRequest) -> JsonResponse:
    """Serve the RFC 8414 document: allauth's OpenID configuration, which our adapter completes."""
    # One builder for both documents, so /.well-known/openid-configuration never disagrees with this one.
    data = json.loads(oidc_views.configuration(request).content)
    return _public(JsonResponse(data))


@login_not_required
@require_safe
def protected_resource_metadata(request: HttpRequest, resource_path: str = "") -> JsonResponse:
    """Serve the RFC 9728 document for the whole server, or for the resource at resource_path."""
    data = {
        "resource": absolute_url(request, resource_path),
        "authorization_servers": [issuer()],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [API_SCOPE],
        "resource_name": "agentprocess server",
    }
    return _public(JsonResponse(data))


def _resource_checked(view):
    """Answer a malformed `resource` as RFC 8707 §2 says (400 invalid_target), which allauth's view raises as is."""

    @functools.wraps(view)
    @csrf_exempt
    @login_not_required
    def checked(request: HttpRequest, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ValidationError as exc:
            response = JsonResponse(
                {"error": "invalid_target", "error_description": " ".join(exc.messages)}, status=400
            )
            response["Cache-Control"] = "no-store"
            return response

    return checked


token = _resource_checked(oidc_views.token)
device_code = _resource_checked(oidc_views.device_code)
