"""Dynamic client registration (RFC 7591), held to what a stranger may cost before it costs anything.

Anyone may register, so the order is what keeps it cheap: the rate limit per address comes first, then
the body is read up to OAUTH_REGISTRATION_MAX_BYTES, then parsed; only the fields this server knows are
kept (RFC 7591 §2: others are ignored, neither stored nor returned), each within its caps. allauth's
registration form and the adapter's `validate_client_registration` then judge the client, as they would
in allauth's own view. A registered client is public and has no secret, so nothing is hashed; and past
OAUTH_UNUSED_CLIENTS_MAX registrations never used, the oldest of them are deleted.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from urllib.parse import urlsplit

from allauth.core import ratelimit
from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.forms import ClientRegistrationForm
from allauth.idp.oidc.models import Client
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from accounts import connections
from base.storable import printable

# The client metadata this server keeps (RFC 7591 §2), by the JSON type each must have: what it uses, and
# what describes the client to an administrator. Anything else is dropped.
TEXT_FIELDS = (
    "client_name",
    "token_endpoint_auth_method",
    "scope",
    "logo_uri",
    "client_uri",
    "tos_uri",
    "policy_uri",
    "software_id",
    "software_version",
)
LIST_FIELDS = ("redirect_uris", "post_logout_redirect_uris", "grant_types", "response_types", "contacts")
# The rate limit's name in ACCOUNT_RATE_LIMITS, where allauth's rate limiter reads it.
RATE_LIMIT_ACTION = "oauth_client_registration"


class Refused(Exception):
    """A registration this server does not accept, answered as RFC 7591 §3.2.2 says."""

    def __init__(self, problems: list[str], *, error: str = "invalid_client_metadata", status: int = 400):
        super().__init__("; ".join(problems))
        self.error, self.problems, self.status = error, problems, status

    def response(self) -> JsonResponse:
        answer = JsonResponse({"error": self.error, "error_description": str(self)}, status=self.status)
        answer["Cache-Control"] = "no-store"
        return answer


def read_body(request: HttpRequest) -> bytes:
    """Read the request body, refusing one over OAUTH_REGISTRATION_MAX_BYTES before reading past it."""
    limit = settings.OAUTH_REGISTRATION_MAX_BYTES
    too_large = Refused([f"the registration is larger than {limit} bytes"], status=HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Refused(["Content-Length is not a number"]) from None
    if declared > limit:
        raise too_large
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


def parse_metadata(body: bytes) -> dict:
    """The client metadata in a registration body: the fields this server knows, each checked and capped.

    Every problem is named at once; a field this server does not know is dropped unread.
    """
    try:
        document = json.loads(body)
    except RecursionError:
        raise Refused(["the body nests too deeply to be client metadata"]) from None
    except ValueError as exc:
        raise Refused([f"the body is not JSON: {printable(str(exc), 200)}"]) from None
    if not isinstance(document, dict):
        raise Refused(["the body must be a JSON object of client metadata (RFC 7591 §2)"])
    max_chars, max_items = settings.OAUTH_REGISTRATION_MAX_CHARS, settings.OAUTH_REGISTRATION_MAX_URIS
    metadata, problems = {}, []
    for field in TEXT_FIELDS:
        value = document.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"{field} must be a string")
        elif len(value) > max_chars:
            problems.append(f"{field} is longer than {max_chars} characters")
        else:
            metadata[field] = value
    for field in LIST_FIELDS:
        value = document.get(field)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            problems.append(f"{field} must be an array of strings")
        elif len(value) > max_items:
            problems.append(f"{field} has more than {max_items} entries")
        elif any(len(item) > max_chars for item in value):
            problems.append(f"{field} has an entry longer than {max_chars} characters")
        else:
            metadata[field] = value
    for uri in metadata.get("post_logout_redirect_uris", ()):
        if (problem := logout_uri_problem(uri)) is not None:
            problems.append(f"post_logout_redirect_uris: {printable(uri, 200)} {problem}")
    if problems:
        only_redirects = all(problem.startswith("redirect_uris ") for problem in problems)
        raise Refused(problems, error="invalid_redirect_uri" if only_redirects else "invalid_client_metadata")
    return metadata


def logout_uri_problem(uri: str) -> str | None:
    """Why a post-logout address cannot be registered: an absolute https address (http on loopback), no fragment."""
    parts = urlsplit(uri)
    loopback = parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost")
    if parts.scheme != "https" and not loopback:
        return "is not an https address"
    if not parts.hostname:
        return "names no host"
    if parts.fragment or uri.endswith("#"):
        return "has a fragment"
    return None


def new_client(metadata: dict) -> Client:
    """The (unsaved) client the metadata describes, judged by allauth's form and the adapter."""
    form = ClientRegistrationForm(data=metadata)
    if not form.is_valid():
        error = "invalid_redirect_uri" if list(form.errors) == ["redirect_uris"] else "invalid_client_metadata"
        raise Refused([f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()], error=error)
    data = form.cleaned_data
    public = data["token_endpoint_auth_method"] == Client.AuthenticationMethod.NONE
    # A public client never shows a secret: an unusable one is stored, which costs no hashing.
    client = Client(
        name=data["client_name"],
        type=Client.Type.PUBLIC if public else Client.Type.CONFIDENTIAL,
        secret=make_password(None),
    )
    client.set_grant_types(data["grant_types"])
    client.set_response_types(data["response_types"])
    client.set_scopes(data["scope"])
    client.set_redirect_uris(data["redirect_uris"])
    # Logout sends a person back only to one of these, exactly, with an ID token issued to this client
    # for them (accounts/redirects.py).
    client.set_post_logout_redirect_uris(metadata.get("post_logout_redirect_uris", []))
    client.data = {"dcr": True, "client_metadata": metadata}
    try:
        get_adapter().validate_client_registration(client=client, client_metadata=metadata, token=None, bearer_token=None)
    except ValidationError as exc:
        raise Refused(exc.messages) from None
    return client


def described(client: Client, metadata: dict) -> dict:
    """The registration response (RFC 7591 §3.2.1): the client's id and the metadata it holds."""
    return {
        **metadata,
        "client_id": client.id,
        "client_id_issued_at": int(client.created_at.timestamp()),
        "client_name": client.name,
        "token_endpoint_auth_method": Client.AuthenticationMethod.NONE,
        "scope": " ".join(client.get_scopes()),
        "redirect_uris": client.get_redirect_uris(),
        "grant_types": client.get_grant_types(),
        "response_types": client.get_response_types(),
    }


@csrf_exempt
@login_not_required
@require_POST
def client_registration(request: HttpRequest) -> JsonResponse:
    """Register a public client (RFC 7591 §3): 201 with its id, or 400, 413 or 429 saying why not."""
    if not settings.IDP_OIDC_DCR_ENABLED:
        raise Http404("Dynamic client registration is off.")
    if not ratelimit.consume(request, action=RATE_LIMIT_ACTION):
        answer = JsonResponse(
            {"error": "temporarily_unavailable", "error_description": "Too many registrations from this address."},
            status=HTTPStatus.TOO_MANY_REQUESTS,
        )
        answer["Cache-Control"] = "no-store"
        return answer
    try:
        metadata = parse_metadata(read_body(request))
        client = new_client(metadata)
    except Refused as refused:
        return refused.response()
    with transaction.atomic():
        client.save()
        connections.forget_unused_registrations(keep=settings.OAUTH_UNUSED_CLIENTS_MAX)
    answer = JsonResponse(described(client, metadata), status=HTTPStatus.CREATED)
    answer["Cache-Control"] = "no-store"
    return answer
