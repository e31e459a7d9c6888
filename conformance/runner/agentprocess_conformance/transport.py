"""The two doors to a server's tools: MCP over Streamable HTTP (spec §4) and, where offered, REST.

Both turn one tool call into the tools.md envelope. Nothing here knows how any server is built: MCP is
spoken as the MCP specification defines it (JSON-RPC 2.0 over HTTP POST, a JSON or server-sent-events
answer, the `initialize` handshake of revisions 2025-06-18 and 2025-11-25).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from dataclasses import dataclass, field

import requests

from . import __version__
from .oauth import BearerToken, ClientCredentials, Discovery

TIMEOUT = 60
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")


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
    negotiated: str | None = None
    tools: list | None = None
    result_problems: list[str] = field(default_factory=list)
    results: int = 0


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


class McpSession:
    """An MCP client over Streamable HTTP for one identity: handshake once, then `tools/call`."""

    def __init__(self, url: str, credential: ClientCredentials | BearerToken | None, discovery: Discovery | None, *,
                 protocol_version: str = HANDSHAKE_VERSIONS[0], http: requests.Session | None = None,
                 headers: dict[str, str] | None = None):
        self.url = url
        self.extra_headers = headers or {}
        self.credential = credential
        self.discovery = discovery
        self.protocol_version = protocol_version
        self.http = http or requests.Session()
        self.ids = itertools.count(1)
        self.token: str | None = None
        self.session_id: str | None = None
        self.negotiated: str | None = None
        self.facts = McpFacts()

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   **self.extra_headers}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.negotiated:
            headers["MCP-Protocol-Version"] = self.negotiated
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def authenticate(self) -> None:
        self.token = self.credential.token(self.http, self.discovery, resource=self.url)

    def post(self, message: dict) -> requests.Response:
        if self.token is None and self.credential is not None:
            self.authenticate()
        response = self.http.post(self.url, json=message, headers=self.headers(), timeout=TIMEOUT)
        if response.status_code == 401 and isinstance(self.credential, ClientCredentials):
            # An access token may expire during a long run: a new one, once.
            self.authenticate()
            response = self.http.post(self.url, json=message, headers=self.headers(), timeout=TIMEOUT)
        return response

    def request(self, method: str, params: dict | None = None) -> dict:
        """Send one JSON-RPC request and return its result, or raise TransportError."""
        message_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": message_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        if response.status_code != 200:
            raise TransportError(f"MCP {method}: HTTP {response.status_code}: {response.text[:300]}")
        answer = self.read(response, message_id)
        if "error" in answer:
            raise TransportError(f"MCP {method}: JSON-RPC error {answer['error']}")
        if not isinstance(answer.get("result"), dict):
            raise TransportError(f"MCP {method}: the response has no result object: {str(answer)[:300]}")
        return answer["result"]

    def read(self, response: requests.Response, message_id: int) -> dict:
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
        """Run the initialize handshake and send `notifications/initialized`."""
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

    def __init__(self, tools_url: str, http: requests.Session, headers: dict[str, str] | None = None):
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
                 http: requests.Session | None = None):
        super().__init__(tools_url, http or requests.Session())
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
