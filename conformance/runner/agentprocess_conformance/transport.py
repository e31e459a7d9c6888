"""The two doors to a server's tools: MCP over Streamable HTTP (spec §4) and, where offered, REST.

Both turn one tool call into the tools.md envelope. Nothing here knows how any server is built: MCP is
spoken as the MCP specification defines it, JSON-RPC 2.0 over HTTP POST with a JSON or server-sent-events
answer, in either era:

- the handshake revisions 2025-06-18 and 2025-11-25: `initialize`, `notifications/initialized`, then
  requests carrying the negotiated `MCP-Protocol-Version` (and any `Mcp-Session-Id`);
- the stateless revision 2026-07-28: no handshake; `server/discover` says what the server speaks, and
  every request carries its version and the client's capabilities in `params._meta`, repeated in the
  `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
from dataclasses import dataclass, field

from . import __version__, exchanges
from .oauth import BearerToken, ClientCredentials, Discovery
from .web import Response, Session

TIMEOUT = 60
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")
STATELESS_VERSIONS = ("2026-07-28",)
VERSIONS = STATELESS_VERSIONS + HANDSHAKE_VERSIONS
# `--mcp auto`: the stateless revision when the server speaks it, else the newest handshake.
AUTO = "auto"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class TransportError(Exception):
    """The door itself failed: an HTTP or JSON-RPC error where a tool result was due."""


@dataclass
class Envelope:
    """One tool answer: `{ok: true, data}` or `{ok: false, error}`, with how it travelled."""

    body: object
    status: int
    door: str

    @property
    def ok(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("ok") is True

    @property
    def data(self):
        return self.body.get("data") if isinstance(self.body, dict) else None

    @property
    def error(self) -> dict:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error if isinstance(error, dict) else {}


@dataclass
class McpFacts:
    """What the MCP layer itself did, for the MCP checks: handshake answers and result shapes."""

    initialize: dict | None = None
    discover: dict | None = None
    negotiated: str | None = None
    tools: list | None = None
    result_problems: list[str] = field(default_factory=list)
    results: int = 0
    # 2026-07-28: the resultType of each result (a complete result says "complete").
    result_types: list = field(default_factory=list)


def parse_sse(text: str) -> list[dict]:
    """Return the JSON messages of a server-sent-events body (each event's `data:` lines joined)."""
    messages, lines = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
        elif not line and lines:
            with contextlib.suppress(ValueError):
                messages.append(json.loads("\n".join(lines)))
            lines = []
    return messages


def header_value(value: str) -> str:
    """A header value as MCP 2026-07-28 sends it: as is when printable ASCII, else `=?base64?…?=`."""
    if value.isascii() and value.isprintable():
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


class McpSession:
    """An MCP client over Streamable HTTP for one identity: handshake once (or, stateless, not), then `tools/call`."""

    def __init__(self, url: str, credential: ClientCredentials | BearerToken | None, discovery: Discovery | None, *,
                 protocol_version: str = HANDSHAKE_VERSIONS[0], http: Session | None = None,
                 headers: dict[str, str] | None = None):
        self.url = url
        self.extra_headers = headers or {}
        self.credential = credential
        self.discovery = discovery
        self.protocol_version = protocol_version
        self.http = http or exchanges.session()
        self.ids = itertools.count(1)
        self.token: str | None = None
        self.session_id: str | None = None
        self.negotiated: str | None = None
        self.facts = McpFacts()

    @property
    def stateless(self) -> bool:
        return self.protocol_version in STATELESS_VERSIONS

    def headers(self, message: dict | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   **self.extra_headers}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.stateless:
            headers["MCP-Protocol-Version"] = self.protocol_version
            if message and message.get("method"):
                headers["Mcp-Method"] = message["method"]
                named = (message.get("params") or {}).get(NAME_PARAMS.get(message["method"], ""))
                if isinstance(named, str):
                    headers["Mcp-Name"] = header_value(named)
            return headers
        if self.negotiated:
            headers["MCP-Protocol-Version"] = self.negotiated
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def authenticate(self) -> None:
        self.token = self.credential.token(self.http, self.discovery, resource=self.url)

    def post(self, message: dict) -> Response:
        if self.token is None and self.credential is not None:
            self.authenticate()
        response = self.http.post(self.url, json=message, headers=self.headers(message), timeout=TIMEOUT)
        if response.status_code == 401 and isinstance(self.credential, ClientCredentials):
            # An access token may expire during a long run: a new one, once.
            self.authenticate()
            response = self.http.post(self.url, json=message, headers=self.headers(message), timeout=TIMEOUT)
        return response

    def stamped(self, params: dict | None) -> dict | None:
        """The params of a request; at 2026-07-28 with the version and capabilities in `_meta`."""
        if not self.stateless:
            return params
        params = dict(params or {})
        params["_meta"] = {**(params.get("_meta") or {}), VERSION_META: self.protocol_version, CAPABILITIES_META: {}}
        return params

    def request(self, method: str, params: dict | None = None) -> dict:
        """Send one JSON-RPC request and return its result, or raise TransportError."""
        message_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": message_id, "method": method}
        params = self.stamped(params)
        if params is not None:
            message["params"] = params
        response = self.post(message)
        if response.status_code != 200:
            raise TransportError(f"MCP {method} (MCP {self.protocol_version}): HTTP {response.status_code}: "
                                 f"{response.text[:300]}")
        answer = self.read(response, message_id)
        if "error" in answer:
            raise TransportError(f"MCP {method}: JSON-RPC error {answer['error']}")
        if not isinstance(answer.get("result"), dict):
            raise TransportError(f"MCP {method}: the response has no result object: {str(answer)[:300]}")
        if self.stateless:
            self.facts.result_types.append(answer["result"].get("resultType"))
        return answer["result"]

    def read(self, response: Response, message_id: int) -> dict:
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            messages = parse_sse(response.text)
        elif kind == "application/json":
            body = response.json()
            messages = body if isinstance(body, list) else [body]
        else:
            raise TransportError(f"MCP: answer of type {kind!r}, neither JSON nor server-sent events")
        for message in messages:
            if isinstance(message, dict) and message.get("id") == message_id:
                return message
        raise TransportError(f"MCP: no response with id {message_id} in the answer")

    def open(self) -> None:
        """Run the initialize handshake and send `notifications/initialized`; at 2026-07-28, `server/discover`."""
        if self.stateless:
            result = self.request("server/discover", {})
            self.facts.discover = result
            supported = result.get("supportedVersions") or []
            if self.protocol_version not in supported:
                raise TransportError(f"MCP server/discover: the server speaks {supported}, not {self.protocol_version}")
            self.negotiated = self.facts.negotiated = self.protocol_version
            return
        params = {
            "protocolVersion": self.protocol_version,
            "capabilities": {},
            "clientInfo": {"name": "agentprocess-conformance", "version": __version__},
        }
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": params}
        response = self.post(message)
        if response.status_code != 200:
            raise TransportError(f"MCP initialize: HTTP {response.status_code}: {response.text[:300]}")
        self.session_id = response.headers.get("Mcp-Session-Id")
        answer = self.read(response, message["id"])
        if not isinstance(answer.get("result"), dict):
            raise TransportError(f"MCP initialize: no result: {str(answer)[:300]}")
        self.facts.initialize = answer["result"]
        self.negotiated = self.facts.negotiated = answer["result"].get("protocolVersion")
        if self.negotiated not in HANDSHAKE_VERSIONS:
            raise TransportError(f"MCP initialize: the server chose protocol version {self.negotiated!r}, "
                                 f"which this runner does not speak ({', '.join(HANDSHAKE_VERSIONS)})")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def list_tools(self) -> list:
        tools, cursor = [], None
        for _ in range(100):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None)
            tools += result.get("tools") or []
            cursor = result.get("nextCursor")
            if not cursor:
                break
        self.facts.tools = tools
        return tools

    def call_tool(self, tool: str, arguments: dict) -> Envelope:
        if self.negotiated is None:
            self.open()
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        envelope = self.envelope_of(tool, result)
        return Envelope(body=envelope, status=200, door="mcp")

    def envelope_of(self, tool: str, result: dict):
        """Take the envelope from structuredContent (or the text content) and note any MCP shape problem."""
        self.facts.results += 1
        structured = result.get("structuredContent")
        text = next((part.get("text") for part in result.get("content") or []
                     if isinstance(part, dict) and part.get("type") == "text"), None)
        from_text = None
        if text is not None:
            try:
                from_text = json.loads(text)
            except ValueError:
                from_text = None
        envelope = structured if structured is not None else from_text
        problems = self.facts.result_problems
        if envelope is None:
            problems.append(f"{tool}: neither structuredContent nor a JSON text content holds the envelope")
            return None
        if structured is not None and from_text is not None and from_text != structured:
            problems.append(f"{tool}: the text content and structuredContent differ")
        ok = isinstance(envelope, dict) and envelope.get("ok") is True
        if bool(result.get("isError", False)) == ok:
            problems.append(f"{tool}: isError is {result.get('isError')!r} on an envelope with ok {ok}")
        return envelope


class RestSession:
    """The REST form of the tools: `POST <tools URL><tool>` with the arguments as the JSON body."""

    def __init__(self, tools_url: str, http: Session, headers: dict[str, str] | None = None):
        self.tools_url = tools_url if tools_url.endswith("/") else tools_url + "/"
        self.http = http
        self.extra_headers = headers or {}

    def call_tool(self, tool: str, arguments: dict) -> Envelope:
        response = self.http.post(self.tools_url + tool, json=arguments, headers=self.extra_headers, timeout=TIMEOUT)
        try:
            body = response.json()
        except ValueError:
            raise TransportError(f"REST {tool}: HTTP {response.status_code}, not JSON: {response.text[:300]}") from None
        return Envelope(body=body, status=response.status_code, door="rest")


class BearerRest(RestSession):
    """REST with an agent's bearer token, taking a new one when it expires."""

    def __init__(self, tools_url: str, credential: ClientCredentials | BearerToken, discovery: Discovery | None,
                 http: Session | None = None):
        super().__init__(tools_url, http or exchanges.session())
        self.credential = credential
        self.discovery = discovery
        self.token: str | None = None

    def call_tool(self, tool: str, arguments: dict) -> Envelope:
        for attempt in range(2):
            if self.token is None:
                self.token = self.credential.token(self.http, self.discovery, resource=None)
            self.extra_headers = {"Authorization": f"Bearer {self.token}"}
            envelope = super().call_tool(tool, arguments)
            if envelope.status != 401 or attempt or not isinstance(self.credential, ClientCredentials):
                return envelope
            # An access token may expire during a long run: a new one, once.
            self.token = None
        return envelope
