"""The MCP door: raw JSON-RPC over HTTP, the official MCP SDK against a live server, and parity with REST."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from datetime import timedelta
from urllib.parse import urlsplit

from django.utils import timezone

# An agent-only process: a file-evidenced step with a choice of routes, then a wait for an event.
SCREENING = """---
name: screening
description: Screen a vendor with a report and choose a route.
inputs:
  vendor: string
steps:
  - id: screen
    agent: Screen the vendor against the sanctions lists; attach the report.
    output:
      cleared: boolean
    evidence: [file]
    next:
      - { to: settle, when: Cleared }
      - { to: declined, when: Not cleared }
  - id: settle
    wait_for: paid
    next: done
  - id: declined
    finish: declined
  - id: done
    finish: onboarded
---
Screening a vendor before the first payment.
"""

# A person's approval, so that a work item exists for `decide` to be refused on.
APPROVAL = """---
name: approval
description: Draft a note, then finance approves it.
inputs:
  topic: string
steps:
  - id: draft
    agent: Draft the note.
    output:
      text: string
    next: approve
  - id: approve
    person: finance
    approve: Approve the note when it is accurate.
    next: done
  - id: done
    finish: approved
---
Drafting and approving a note.
"""

MCP_VERSIONS = ("2025-06-18", "2025-11-25")


def rid() -> str:
    return str(uuid.uuid4())


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def client_credentials_token(client, client_id: str, secret: str, **params) -> str:
    """Get an access token as an agent does: token endpoint from RFC 8414, client_secret_basic, our scope."""
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    response = client.post(
        urlsplit(metadata["token_endpoint"]).path,
        {"grant_type": "client_credentials", "scope": "agentprocess", **params},
        HTTP_AUTHORIZATION="Basic " + b64(f"{client_id}:{secret}".encode()),
    )
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def person_token(user, *, scopes: str = "agentprocess") -> str:
    """Store an access token for a person, as an MCP client's authorization-code + PKCE sign-in leaves one."""
    from allauth.idp.oidc.models import Client as OAuthClient
    from allauth.idp.oidc.models import Token

    app = OAuthClient.objects.create(name="an MCP client", grant_types="authorization_code")
    raw = secrets.token_urlsafe(32)
    token = Token(
        type=Token.Type.ACCESS_TOKEN,
        client=app,
        user=user,
        expires_at=timezone.now() + timedelta(hours=1),
        scopes=scopes,
    )
    token.set_value(raw)
    token.save()
    return raw


class McpClient:
    """POST JSON-RPC to /mcp through Django's test client, with a bearer token."""

    def __init__(self, client, token: str | None, *, path: str = "/mcp"):
        self.client = client
        self.token = token
        self.path = path
        self.ids = 0

    def headers(self, **extra) -> dict:
        headers = {"HTTP_ACCEPT": "application/json, text/event-stream"}
        if self.token is not None:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {self.token}"
        return {**headers, **extra}

    def post(self, body, *, content_type: str = "application/json", **headers):
        """POST a raw body (a str or bytes is sent as is, anything else as JSON)."""
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        # CONTENT_TYPE again: Django's test client leaves it off an empty body.
        extra = {"CONTENT_TYPE": content_type, **self.headers(**headers)}
        return self.client.post(self.path, data, content_type=content_type, **extra)

    def request(self, method: str, params: dict | None = None, **headers):
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            message["params"] = params
        return self.post(message, **headers)

    def rpc(self, method: str, params: dict | None = None) -> dict:
        """Send a request and return its JSON-RPC result, asserting it is one."""
        response = self.request(method, params)
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["jsonrpc"] == "2.0" and body["id"] == self.ids
        assert "result" in body, body
        return body["result"]

    def call(self, tool: str, **arguments) -> dict:
        """Call a tool and return the tools.md envelope it carries as structuredContent."""
        result = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        envelope = result["structuredContent"]
        [content] = result["content"]
        assert content["type"] == "text" and json.loads(content["text"]) == envelope
        assert result["isError"] is (not envelope["ok"])
        return envelope

    def data(self, tool: str, **arguments) -> dict:
        envelope = self.call(tool, **arguments)
        assert envelope["ok"], envelope
        return envelope["data"]


class RestClient:
    """POST to /api/tools/<tool> through Django's test client, with a bearer token."""

    def __init__(self, client, token: str):
        self.client = client
        self.token = token

    def call(self, tool: str, **arguments) -> dict:
        response = self.client.post(
            f"/api/tools/{tool}",
            json.dumps(arguments),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.token}",
        )
        return response.json()

    def data(self, tool: str, **arguments) -> dict:
        envelope = self.call(tool, **arguments)
        assert envelope["ok"], envelope
        return envelope["data"]
