"""The agent tools over MCP Streamable HTTP at `/mcp`: one JSON-RPC message per POST, bearer tokens only.

The door has no rules of its own: `tools/call` runs `runs.tools.call_tool` exactly as the REST door does
and puts the tools.md envelope in `structuredContent`. Answers are plain JSON (never server-sent events)
and there are no sessions, so any request may arrive at any time from any worker.

Two eras of the protocol are spoken, told apart by the `MCP-Protocol-Version` header:
- the handshake revisions (2025-06-18, 2025-11-25): `initialize`, then requests; and
- 2026-07-28, stateless: no `initialize`; `server/discover`; every request carries its protocol version
  and client capabilities in `params._meta`, repeated in the `MCP-Protocol-Version`, `Mcp-Method` and
  `Mcp-Name` headers, which must agree with the body; every result says `resultType` and names the
  server in its `_meta`; an error a request caused travels with a 4xx status.
"""

from __future__ import annotations

import base64
import binascii
import logging
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils.http import is_same_domain
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from rest_framework.renderers import JSONRenderer

from accounts.identity import Identity
from accounts.oauth import (
    API_SCOPE,
    MCP_PATH,
    InsufficientScope,
    absolute_url,
    identity_for_token,
    protected_resource_metadata_url,
    scope_challenge,
)
from base import json_text
from base.storable import MAX_DEPTH, depth_exceeds, printable, unstorable
from processes.capabilities import TOOLS
from runs import files
from runs.errors import Invalid, ToolError, database_unavailable
from runs.tools import call_tool

from .mcp_tools import INSTRUCTIONS, tool_definitions
from .parsers import refuse_constant

log = logging.getLogger(__name__)

# The revisions with an `initialize` handshake, oldest first; the last is offered to clients we do not know.
PROTOCOL_VERSIONS = ("2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
# The stateless revisions: each request carries its own version (`params._meta`).
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = PROTOCOL_VERSIONS + MODERN_PROTOCOL_VERSIONS
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# The `params._meta` keys of a 2026-07-28 request, and the one a result names this server under.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
# A method's params member that its `Mcp-Name` header repeats.
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# How long a client may reuse the tool list and the discovery result: they change only on a deploy.
CACHE_MS = 300_000

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022
# 2026-07-28: an error the request caused is not 200 (a missing method is 404, anything else 400).
MODERN_ERROR_STATUS = {METHOD_NOT_FOUND: 404}

try:
    SERVER_VERSION = package_version("agentprocess-server")
except PackageNotFoundError:  # run from a checkout that was never installed
    SERVER_VERSION = "unknown"

SERVER_INFO = {
    "name": "agentprocess-server",
    "title": "agentprocess process server",
    "version": SERVER_VERSION,
}


class RpcError(Exception):
    """A JSON-RPC error; `status` is the HTTP status it travels with (200 once a request was understood)."""

    def __init__(self, code: int, message: str, data=None, *, status: int = 200):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status

    def as_error(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _dumps(value) -> str:
    # As the REST door serializes a tool's data (DRF's JSON renderer, base.json_text).
    return json_text.rendered(value, _RENDERER).decode()


_RENDERER = JSONRenderer()


def _json(payload: dict, status: int = 200, headers: dict | None = None) -> HttpResponse:
    return HttpResponse(json_text.rendered(payload, _RENDERER), status=status, content_type="application/json", headers=headers)


def _accepted() -> HttpResponse:
    response = HttpResponse(status=202)
    # An empty body has no media type.
    del response["Content-Type"]
    return response


def _error(code: int, message: str, *, status: int, request_id=None, data=None, headers=None) -> HttpResponse:
    return _json(
        {"jsonrpc": "2.0", "id": request_id, "error": RpcError(code, message, data).as_error()},
        status,
        headers,
    )


# --- the HTTP layer -----------------------------------------------------------------------------


def _origin_allowed(request: HttpRequest, origin: str) -> bool:
    """Tell whether a browser page at origin may call this endpoint (DNS-rebinding defence)."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if not parts.scheme or not parts.netloc:
        return False
    scheme, netloc = parts.scheme.lower(), parts.netloc.lower()
    # The host is what a rebinding page cannot fake; behind a TLS proxy the scheme seen here may differ.
    if netloc == request.get_host().lower():
        return True
    if settings.PUBLIC_URL:
        public = urlsplit(settings.PUBLIC_URL)
        if (scheme, netloc) == (public.scheme.lower(), public.netloc.lower()):
            return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        # The same patterns Django's CSRF check accepts, including "https://*.example.com".
        trusted_parts = urlsplit(trusted)
        if trusted_parts.scheme.lower() != scheme:
            continue
        pattern = trusted_parts.netloc.lower()
        if pattern.startswith("*"):
            if is_same_domain(netloc, pattern[1:]):
                return True
        elif pattern == netloc:
            return True
    return False


def _challenge(request: HttpRequest, error: str | None = None, description: str | None = None) -> str:
    """Build the RFC 6750 / RFC 9728 challenge that points a client at our protected-resource metadata."""
    parts = []
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    parts.append(f'resource_metadata="{protected_resource_metadata_url(request, MCP_PATH)}"')
    parts.append(f'scope="{API_SCOPE}"')
    return "Bearer " + ", ".join(parts)


def _unauthorized(request: HttpRequest, message: str, error: str | None = None) -> HttpResponse:
    return _error(
        INVALID_REQUEST,
        message,
        status=401,
        headers={"WWW-Authenticate": _challenge(request, error, message if error else None)},
    )


def _authenticate(request: HttpRequest) -> Identity | HttpResponse:
    """Return the caller a bearer token stands for, or the 401 to send; a browser session never counts."""
    header = request.headers.get("Authorization")
    if header is None:
        return _unauthorized(request, "Authorization required: send an OAuth bearer token.")
    scheme, _, raw_token = header.partition(" ")
    raw_token = raw_token.strip()
    if scheme.lower() != "bearer":
        # RFC 6750 §3: another scheme is no authentication at all here, so the challenge names no error.
        return _unauthorized(request, "Only an OAuth bearer token is accepted here.")
    if not raw_token:
        return _unauthorized(request, "The bearer token is missing.", "invalid_request")
    # Pinned to this endpoint's URL: a token issued for another resource is refused (RFC 8707).
    try:
        identity = identity_for_token(raw_token, resource=lambda: absolute_url(request, MCP_PATH))
    except InsufficientScope:
        message = f"The bearer token was not granted the {API_SCOPE} scope; ask for it when getting a token."
        challenge = scope_challenge(resource_metadata=protected_resource_metadata_url(request, MCP_PATH))
        return _error(INVALID_REQUEST, message, status=403, headers={"WWW-Authenticate": challenge})
    if identity is None:
        return _unauthorized(
            request, "The bearer token is invalid, expired, revoked or for another resource.", "invalid_token"
        )
    return identity


def _accepts_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept")
    if not accept:
        return True
    media_types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(media_types & {"application/json", "application/*", "*/*"})


def _parse(request: HttpRequest):
    """Return the decoded JSON body, or raise RpcError (the message has no id yet)."""
    try:
        body = request.body
    except RequestDataTooBig:
        raise RpcError(
            INVALID_REQUEST, "The request body is larger than this server accepts.", status=413
        ) from None
    try:
        # NaN and Infinity are not JSON; the REST door refuses them too.
        return json_text.loads(body.decode("utf-8"), parse_constant=refuse_constant)
    except (ValueError, RecursionError) as exc:
        message = f"Parse error: the body is not valid JSON ({str(exc)[:200]})."
        raise RpcError(PARSE_ERROR, message, status=400) from None


@csrf_exempt
@login_not_required
@never_cache
def endpoint(request: HttpRequest) -> HttpResponse:
    """Answer one POSTed JSON-RPC message under MCP Streamable HTTP."""
    # Origin first: a page on a rebinding domain must learn nothing, not even that it needs a token.
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(request, origin):
        return _error(INVALID_REQUEST, f"Origin {origin[:200]} is not allowed.", status=403)
    if request.method != "POST":
        # No server-sent event stream and no sessions to end, so GET and DELETE have nothing to do.
        return _error(
            INVALID_REQUEST,
            "Method not allowed: POST one JSON-RPC message.",
            status=405,
            headers={"Allow": "POST"},
        )
    try:
        identity = _authenticate(request)
    except (OperationalError, InterfaceError) as exc:
        log.warning("mcp: database unavailable while checking a token: %s", exc)
        return _error(
            INVALID_REQUEST,
            "The database is briefly unavailable; try again.",
            status=503,
            headers={"Retry-After": "1"},
        )
    if isinstance(identity, HttpResponse):
        return identity
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    if version is not None and version not in SUPPORTED_VERSIONS:
        return _unsupported(version)
    if not _accepts_json(request):
        return _error(INVALID_REQUEST, "Not acceptable: the answer is application/json.", status=406)
    if request.content_type != "application/json":
        return _error(
            INVALID_REQUEST, "Unsupported media type: send Content-Type: application/json.", status=415
        )
    try:
        message = _parse(request)
    except RpcError as error:
        return _error(error.code, error.message, status=error.status)
    if version in MODERN_PROTOCOL_VERSIONS:
        return _answer_modern(request, identity, message)
    return _answer(request, identity, message)


def _unsupported(version) -> HttpResponse:
    """The answer to a protocol version this server does not speak: 400, -32022, naming those it does."""
    requested = printable(version[:64]) if isinstance(version, str) else version
    return _error(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; this server speaks {', '.join(SUPPORTED_VERSIONS)}.",
        status=400,
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


# --- JSON-RPC -----------------------------------------------------------------------------------


def _valid_id(value) -> bool:
    # MCP: a request id is a string or an integer, never null (and a JSON boolean is no integer).
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _request_of(message, *, answers_accepted: bool) -> tuple[object, str] | HttpResponse:
    """Return the id and method of one JSON-RPC request, or the answer to anything else.

    A notification gets 202; so does a client's answer to a request, where `answers_accepted` (the
    handshake revisions, which have server-to-client requests); anything malformed its 400.
    """
    if isinstance(message, list):
        return _error(INVALID_REQUEST, "Batches are not supported: POST one JSON-RPC message.", status=400)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(
            INVALID_REQUEST, 'Invalid request: expected a JSON-RPC 2.0 object ("jsonrpc": "2.0").', status=400
        )
    problems = unstorable({key: value for key, value in message.items() if key != "params"})
    if problems:
        return _error(INVALID_REQUEST, "Invalid request: " + "; ".join(problems), status=400)
    if "method" not in message:
        if answers_accepted and "id" in message and ("result" in message or "error" in message):
            # A client's answer to a request we never send; nothing waits for it.
            return _accepted()
        return _error(INVALID_REQUEST, "Invalid request: no method.", status=400)
    method = message["method"]
    if not isinstance(method, str):
        return _error(INVALID_REQUEST, "Invalid request: method must be a string.", status=400)
    if "id" not in message:
        # Notifications (initialized, cancelled, ...) ask for nothing; a stateless server has nothing to do.
        return _accepted()
    request_id = message["id"]
    if not _valid_id(request_id):
        return _error(INVALID_REQUEST, "Invalid request: id must be a string or an integer.", status=400)
    return request_id, method


def _check_own_params(params: dict) -> None:
    """Raise RpcError when params outside a tool's `arguments` hold text a database cannot store."""
    # A tool's arguments are the tool's to name (runs.arguments.check_arguments); the rest is ours.
    problems = unstorable({key: value for key, value in params.items() if key != "arguments"}, "params")
    if problems:
        raise RpcError(INVALID_PARAMS, "Invalid params: " + "; ".join(problems), status=400)


def _answer(request: HttpRequest, identity: Identity, message) -> HttpResponse:
    """Answer one decoded message: a request gets its response, anything else a 202."""
    found = _request_of(message, answers_accepted=True)
    if isinstance(found, HttpResponse):
        return found
    request_id, method = found
    params = message.get("params", {})
    try:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object.")
        _check_own_params(params)
        handler = METHODS.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {printable(method)}")
        result = handler(request, identity, params)
    except RpcError as error:
        return _json({"jsonrpc": "2.0", "id": request_id, "error": error.as_error()}, error.status)
    return _json({"jsonrpc": "2.0", "id": request_id, "result": result})


# --- 2026-07-28: stateless requests --------------------------------------------------------------


def _answer_modern(request: HttpRequest, identity: Identity, message) -> HttpResponse:
    """Answer one 2026-07-28 message: check its envelope against the headers, then dispatch it."""
    # At this revision a client never answers the server, so a posted response is malformed.
    found = _request_of(message, answers_accepted=False)
    if isinstance(found, HttpResponse):
        return found
    request_id, method = found
    params = message.get("params")
    try:
        if not isinstance(params, dict):
            raise RpcError(
                INVALID_PARAMS,
                f"params must be an object whose _meta carries {PROTOCOL_VERSION_META!r} and "
                f"{CLIENT_CAPABILITIES_META!r}.",
            )
        _check_own_params(params)
        version = _envelope_version(request, method, params)
        handler = MODERN_METHODS.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found at {version}: {printable(method)}")
        result = handler(request, identity, params)
    except RpcError as error:
        if error.code == UNSUPPORTED_PROTOCOL_VERSION:
            return _unsupported(error.data)
        status = MODERN_ERROR_STATUS.get(error.code, 400)
        return _json({"jsonrpc": "2.0", "id": request_id, "error": error.as_error()}, status)
    result = {**result, "resultType": "complete"}
    result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_META: SERVER_INFO}
    return _json({"jsonrpc": "2.0", "id": request_id, "result": result})


def _envelope_version(request: HttpRequest, method: str, params: dict) -> str:
    """Return the request's protocol version once its `_meta` and headers agree, or raise RpcError.

    The order is the revision's: the envelope's keys are there (-32602); the headers repeat the
    envelope's version, the method and the name (-32020), so a client that disagrees with itself is told
    so first; then the version is one this server speaks (-32022).
    """
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META!r} and {CLIENT_CAPABILITIES_META!r}.",
        )
    missing = [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}.")
    version = meta[PROTOCOL_VERSION_META]
    for header, expected, what in (
        (PROTOCOL_VERSION_HEADER, version, "the protocol version in params._meta"),
        (METHOD_HEADER, method, "the method"),
    ):
        sent = request.headers.get(header)
        if sent is None or sent != expected:
            raise RpcError(HEADER_MISMATCH, f"The {header} header does not match {what}.")
    name_key = NAME_PARAMS.get(method)
    named = params.get(name_key) if name_key is not None else None
    if named is not None and _header_value(request.headers.get(NAME_HEADER)) != named:
        raise RpcError(HEADER_MISMATCH, f"The {NAME_HEADER} header does not match params.{name_key}.")
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, f"{PROTOCOL_VERSION_META} must be a string.")
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", version)
    return version


def _header_value(value: str | None) -> str | None:
    """Decode a header value sent as `=?base64?…?=` (a value a header could not carry as it is)."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    payload = value[len("=?base64?"):-2]
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def discover(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """Tell a 2026-07-28 client which revisions this server speaks, what it offers and how to work with it."""
    return {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": {"tools": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": CACHE_MS,
        "cacheScope": "public",
    }


def list_tools_cached(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """List every tool, with how long the list may be reused (the same for every caller)."""
    return {**list_tools(request, identity, params), "ttlMs": CACHE_MS, "cacheScope": "public"}


def initialize(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """Agree on a protocol revision and tell the client what this server is and how to work with it."""
    requested = params.get("protocolVersion")
    return {
        "protocolVersion": requested if requested in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


def ping(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """Answer that the server is here."""
    return {}


def list_tools(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """List every tool on one page; the set never changes while the server runs."""
    return {"tools": list(tool_definitions())}


def run_tool(request: HttpRequest, identity: Identity, params: dict) -> dict:
    """Call one tool through the engine and wrap its tools.md envelope as an MCP tool result."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: name must be a tool name.")
    if name not in TOOLS:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {printable(name)}", {"tools": list(TOOLS)})
    arguments = params.get("arguments")
    envelope = _envelope(request, identity, name, {} if arguments is None else arguments)
    return {
        "content": [{"type": "text", "text": _dumps(envelope)}],
        "structuredContent": envelope,
        "isError": not envelope["ok"],
    }


def _envelope(request: HttpRequest, identity: Identity, tool: str, arguments) -> dict:
    """Return call_tool's answer as `{ok, data}` or `{ok: false, error}`, as the REST door does."""
    with files.serving(request):
        try:
            # The REST door's bound on a body's depth, applied to what stands for the body here.
            if depth_exceeds(arguments, MAX_DEPTH):
                raise Invalid(
                    f"The arguments nest deeper than {MAX_DEPTH} levels.", ["arguments: nested too deeply"]
                )
            return {"ok": True, "data": call_tool(identity, tool, arguments)}
        except ToolError as error:
            return {"ok": False, "error": error.as_error()}
        except (OperationalError, InterfaceError) as exc:
            log.warning("mcp tool %s: database unavailable: %s", tool, exc)
            return {"ok": False, "error": database_unavailable().as_error()}


METHODS = {
    "initialize": initialize,
    "ping": ping,
    "tools/list": list_tools,
    "tools/call": run_tool,
}

# 2026-07-28 has no handshake and no ping.
MODERN_METHODS = {
    "server/discover": discover,
    "tools/list": list_tools_cached,
    "tools/call": run_tool,
}

__all__ = ["LATEST_PROTOCOL_VERSION", "MODERN_PROTOCOL_VERSIONS", "PROTOCOL_VERSIONS", "SUPPORTED_VERSIONS", "endpoint"]
