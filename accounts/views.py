"""OAuth's pages: discovery documents (RFC 8414, RFC 9728), allauth's token endpoints held to RFC 6749 and
RFC 8707, the consent page and RP-initiated logout; and a person's own: the agents they connected, and
their settings."""

import base64
import functools
import json
from urllib.parse import parse_qs, unquote_plus, urlsplit

from allauth.idp.oidc import views as oidc_views
from allauth.idp.oidc.models import Client
from csp.decorators import csp_replace
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required, login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe

from accounts import connections, grants, metadata_documents
from accounts.forms import PreferencesForm
from accounts.models import Agent
from accounts.oauth import API_SCOPE, absolute_url, issuer
from accounts.redirects import post_logout_redirect_uri, redirect_uri_matches
from base.params import optional_integer
from base.storable import unstorable


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


def _oauth_error(error: str, description: str, status: int) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _basic_client_id(request: HttpRequest) -> str | None:
    """The client id in an `Authorization: Basic` header (RFC 6749 §2.3.1 form-encodes it), if any."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    client_id, sep, _ = decoded.partition(":")
    return unquote_plus(client_id) if sep and client_id else None


def _token_request_checked(view):
    """Run one of allauth's token-endpoint views, answering as RFC 6749 and RFC 8707 say where it does not.

    - A form value a database cannot store (NUL, a lone surrogate) is 400 invalid_request.
    - A malformed `resource` is 400 invalid_target (allauth raises it as a bare ValidationError).
    - A client named only in the Basic header has its id copied into the form, where allauth's client
      lookup reads it; a request naming no client at all is 401 invalid_client.
    """

    @functools.wraps(view)
    @csrf_exempt
    @login_not_required
    def checked(request: HttpRequest, *args, **kwargs):
        if request.method == "POST" and (problems := unstorable(dict(request.POST.items()))):
            return _oauth_error("invalid_request", "; ".join(problems), 400)
        if request.method == "POST":
            metadata_documents.refresh(request, request.POST.get("client_id") or _basic_client_id(request) or "")
        if request.method == "POST" and not request.POST.get("client_id"):
            client_id = _basic_client_id(request)
            if client_id is not None:
                form = request.POST.copy()
                form["client_id"] = client_id
                request.POST = form
            elif request.POST.get("grant_type") != "client_credentials":
                return _oauth_error("invalid_client", "Name the client: client_id, or HTTP Basic authentication.", 401)
        try:
            return view(request, *args, **kwargs)
        except ValidationError as exc:
            return _oauth_error("invalid_target", " ".join(exc.messages), 400)

    return checked


@csrf_exempt
@login_not_required
def _token(request: HttpRequest) -> HttpResponse:
    """allauth's token endpoint; a refresh token is exchanged once, and its replay revokes its grant."""
    if request.method != "POST" or request.POST.get("grant_type") != "refresh_token":
        return oidc_views.token(request)
    raw = request.POST.get("refresh_token", "")
    with transaction.atomic():
        stored = grants.lock_refresh_token(raw)
        replayed = stored is None and grants.end_replayed_grant(raw)
        if not replayed:
            response = oidc_views.token(request)
            if stored is not None and response.status_code == 200:
                grants.mark_spent(stored)
    if replayed:
        return _oauth_error(
            "invalid_grant", "This refresh token was already used: every token of its grant is revoked.", 400
        )
    return response


token = _token_request_checked(_token)
device_code = _token_request_checked(oidc_views.device_code)
revoke = _token_request_checked(oidc_views.revoke)


# --- connecting an MCP client: the consent page ---------------------------------------------------


class ConsentView(oidc_views.AuthorizationView):
    """allauth's authorization endpoint, with a consent page that says who is asking and for what.

    The page, the redirect URI check and what happens on consent are ours: the redirect URI must be one
    the client registered, exactly (`redirects.redirect_uri_matches`); allauth checks the client, PKCE
    (S256 only, required of public clients), the scopes and the resource. On consent the client becomes
    an agent acting for this person (`connections.connect`).
    """

    template_name = "accounts/authorize.html"

    def get(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        metadata_documents.refresh(request, request.GET.get("client_id", ""))
        if (refused := self._member_only(request)) is not None:
            return refused
        client_id, redirect_uri = request.GET.get("client_id"), request.GET.get("redirect_uri")
        if not _redirect_allowed(_stored_client(client_id), redirect_uri):
            return _unregistered_redirect(request)
        return _error_status(super().get(request, *args, **kwargs))

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return self._member_only(request) or _error_status(super().post(request, *args, **kwargs))

    def _member_only(self, request: HttpRequest) -> HttpResponse | None:
        if request.user.is_authenticated and getattr(request.user, "membership", None) is None:
            return render(request, "accounts/no_membership.html", status=403)
        return None

    def form_valid(self, form) -> HttpResponse:
        response = super().form_valid(form)
        location = response.get("Location", "")
        if response.status_code == 302 and "code" in parse_qs(urlsplit(location).query):
            client = Client.objects.get(id=self._request_info["client_id"])
            connections.connect(self.request.user, client)
        return response

    def get_context_data(self, **kwargs) -> dict:
        context = super().get_context_data(**kwargs)
        client = context["client"]
        redirect = urlsplit(self._request_info.get("redirect_uri") or "")
        context.update(
            client_name=connections.display_name(client),
            unverified=connections.is_self_registered(client),
            logo=connections.logo_uri(client),
            metadata_host=connections.metadata_host(client),
            redirect_host=redirect.netloc or redirect.scheme,
            organization=self.request.user.membership.organization,
            scopes=form_scopes(context["form"]),
        )
        return context


def _stored_client(client_id: str | None) -> Client | None:
    if not client_id or unstorable(client_id):
        return None
    return Client.objects.filter(id=client_id).first()


def _redirect_allowed(client: Client | None, redirect_uri: str | None) -> bool:
    """Tell whether an authorization request may go on: its redirect URI is one the client registered.

    Without a client or a redirect URI there is nothing to send anywhere, and allauth refuses the request.
    """
    return client is None or redirect_uri is None or redirect_uri_matches(redirect_uri, client.get_redirect_uris())


def _unregistered_redirect(request: HttpRequest) -> HttpResponse:
    error = "The redirect address is not one this client registered, character for character."
    return render(request, "idp/oidc/error.html", {"error": error}, status=400)


def _error_status(response: HttpResponse) -> HttpResponse:
    """Give allauth's error page (an unknown client, a redirect URI it never registered) a 400 status.

    The consent form is a TemplateResponse and every answer to the client a redirect; a plain 200 page
    is the error allauth shows the person instead of redirecting to an address it cannot trust.
    """
    if response.status_code == 200 and not isinstance(response, TemplateResponse):
        response.status_code = 400
    return response


def form_scopes(form) -> list[str]:
    value = form["scopes"].value()
    return [value] if isinstance(value, str) else list(value or [])


# The answer to the consent form redirects to the agent's redirect URI, which form-action would refuse
# (config.settings, CONTENT_SECURITY_POLICY).
authorize = csp_replace({"form-action": None})(ConsentView.as_view())


@csrf_exempt
@login_not_required
@require_http_methods(["GET", "POST"])
def logout(request: HttpRequest) -> HttpResponse:
    """OpenID Connect RP-initiated logout: allauth's, sending the browser only where `redirects` allows.

    A visitor who is not signed in sees the signed-out page and goes nowhere; a signed-in person is asked
    by allauth, signed out, and sent back to the client only with a matching ID token and a registered
    address, else to this server's own page.
    """
    if not request.user.is_authenticated:
        return render(request, "accounts/signed_out.html")
    params = request.GET if request.method == "GET" else request.POST
    if params.get("post_logout_redirect_uri") and post_logout_redirect_uri(request, params) is None:
        params = params.copy()
        del params["post_logout_redirect_uri"]
        if request.method == "GET":
            request.GET = params
        else:
            request.POST = params
    return oidc_views.logout(request)


# --- the agents a person connected ------------------------------------------------------------------


def _visible_agents(request: HttpRequest):
    """The connected agents this person may see: their own, or, for an operator, the organization's."""
    membership = request.user.membership
    agents = Agent.objects.filter(for_user__isnull=False, organization=membership.organization)
    if not membership.is_operator:
        agents = agents.filter(for_user=request.user)
    return agents.select_related("for_user").order_by("-is_active", "-last_used_at", "name")


@login_required
@require_http_methods(["GET", "POST"])
def connected_agents(request: HttpRequest) -> HttpResponse:
    """List the MCP clients a person connected (an operator: everyone's in the organization); revoke one."""
    if getattr(request.user, "membership", None) is None:
        return render(request, "accounts/no_membership.html", status=403)
    agents = _visible_agents(request)
    if request.method == "POST":
        chosen = optional_integer(request.POST, "agent", minimum=1)
        agent = agents.filter(pk=chosen).first() if chosen is not None else None
        if agent is None:
            messages.error(request, "That agent is not one you can disconnect.")
        else:
            connections.disconnect(agent)
            messages.success(request, f"{agent.name} is disconnected; its next call is refused.")
        return redirect("connected-agents")
    clients = {c.id: c for c in Client.objects.filter(id__in=[a.connected_client_id for a in agents])}
    rows = []
    for agent in agents:
        client = clients.get(agent.connected_client_id)
        # A client gone from the server can no longer vouch for anything it said.
        rows.append({"agent": agent, "unverified": client is None or connections.is_self_registered(client)})
    return render(
        request,
        "accounts/connected_agents.html",
        {"rows": rows, "is_operator": request.user.membership.is_operator, "nav": "agents"},
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def preferences(request: HttpRequest) -> HttpResponse:
    """A person's own settings: their name, the time zone pages show moments in, and email notices."""
    form = PreferencesForm(request.POST or None, instance=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Your settings are saved.")
        return redirect("preferences")
    return render(request, "accounts/preferences.html", {"form": form}, status=400 if form.errors else 200)
