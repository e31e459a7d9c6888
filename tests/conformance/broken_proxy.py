"""A deliberately broken server: a proxy in front of a good one that rewrites a few tool answers.

It forwards every request (the Host header too, so the server's URLs and token audiences name the
proxy) and rewrites the tools.md envelope of three kinds of answer, over MCP and REST alike:

- `already_decided`: a decision on a decided item is refused as `stale` instead (spec §3.4 order);
- `newest_first`: a wait that consumed the oldest of several held events shows the newest one's data (§3.6);
- `token_leak`: get_run shows the run's latest claim token in its body (§6 rule 2).

A fault object may also change more than envelopes, each hook optional (tests/conformance/planted.py
has faults that do): `request(tool, arguments)` returns the arguments to forward, `mcp(method, params,
result)` the MCP result to answer, `rest(tool, arguments, envelope)` the envelope over REST alone,
and `headers(path, status, headers)` the response headers.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}
# Headers the proxy's own send_response writes: the server's are not repeated.
OWN = {"date", "server"}
FAULTS = ("already_decided", "newest_first", "token_leak")


class Faults:
    """What the proxy has seen of claims and held events, and how it rewrites answers."""

    def __init__(self, enabled=FAULTS):
        self.enabled = set(enabled)
        self.tokens: dict[str, list[str]] = defaultdict(list)
        self.run_of_token: dict[str, str] = {}
        self.held: dict[str, list[tuple[str, object]]] = defaultdict(list)
        self.lock = threading.Lock()

    def rewrite(self, tool: str, arguments: dict, envelope: dict) -> dict:
        with self.lock:
            self.observe(tool, arguments, envelope)
            decided = tool == "decide" and (envelope.get("error") or {}).get("issues") == ["already_decided"]
            if "already_decided" in self.enabled and decided:
                envelope = {"ok": False, "error": {"code": "stale", "message": "The snapshot is not current."}}
            data = envelope.get("data") if envelope.get("ok") else None
            if isinstance(data, dict) and isinstance(data.get("run"), dict) and isinstance(data.get("data"), dict):
                run_id = data["run"]["id"]
                if "newest_first" in self.enabled:
                    self.swap_events(run_id, data["data"].get("steps") or {})
                if "token_leak" in self.enabled and tool == "get_run" and self.tokens.get(run_id):
                    data["body"] += f"\n<!-- lease {self.tokens[run_id][-1]} -->\n"
        return envelope

    def observe(self, tool: str, arguments: dict, envelope: dict) -> None:
        if not envelope.get("ok"):
            return
        data = envelope.get("data") or {}
        if tool == "claim":
            self.tokens[arguments["runId"]].append(data["token"])
            self.run_of_token[data["token"]] = arguments["runId"]
        elif tool == "renew" and arguments.get("token") in self.run_of_token:
            run_id = self.run_of_token[arguments["token"]]
            self.tokens[run_id].append(data["token"])
            self.run_of_token[data["token"]] = run_id
        elif tool == "send_event" and data.get("consumedBy") is None:
            self.held[arguments["runId"]].append((arguments["name"], arguments.get("data")))

    def swap_events(self, run_id: str, steps: dict) -> None:
        """Show the newest held event's data where the oldest one of the same name was consumed."""
        by_name: dict[str, list] = defaultdict(list)
        for name, data in self.held.get(run_id, []):
            by_name[name].append(data)
        for sent in by_name.values():
            if len(sent) < 2:
                continue
            for record in steps.values():
                if isinstance(record, dict) and record.get("output") == sent[0]:
                    record["output"] = sent[-1]


def rewrite_mcp(faults: Faults, request: dict, answer: dict) -> dict:
    params = request.get("params") or {}
    result = answer.get("result")
    if isinstance(result, dict) and hasattr(faults, "mcp"):
        answer["result"] = result = faults.mcp(request.get("method"), params, result)
    if request.get("method") != "tools/call" or not isinstance(result, dict):
        return answer
    envelope = result.get("structuredContent")
    if envelope is None:
        return answer
    envelope = faults.rewrite(params.get("name"), params.get("arguments") or {}, envelope)
    result["structuredContent"] = envelope
    result["content"] = [{"type": "text", "text": json.dumps(envelope)}]
    return answer


def handler_for(upstream: str, faults: Faults):
    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.outgoing(self.rfile.read(length) if length else b"")
            headers = {key: value for key, value in self.headers.items() if key.lower() not in HOP_BY_HOP}
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            answer = self.rewritten(body, answer, response.getheader("Content-Type") or "")
            self.send_response(response.status)
            headers = [(key, value) for key, value in response.getheaders() if key.lower() not in HOP_BY_HOP | OWN]
            if hasattr(faults, "headers"):
                headers = faults.headers(urlsplit(self.path).path, response.status, headers)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            connection.close()

        def outgoing(self, body: bytes) -> bytes:
            """The request body to forward: a tool's arguments as the fault's `request` hook has them."""
            path = urlsplit(self.path).path
            if self.command != "POST" or not body or not hasattr(faults, "request"):
                return body
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                request = json.loads(body)
                if path.rstrip("/") == "/mcp" and request.get("method") == "tools/call":
                    params = request["params"]
                    params["arguments"] = faults.request(params["name"], params.get("arguments") or {})
                    return json.dumps(request).encode()
                if path.startswith("/api/tools/"):
                    return json.dumps(faults.request(path.rsplit("/", 1)[1], request)).encode()
            return body

        def rewritten(self, body: bytes, answer: bytes, content_type: str) -> bytes:
            path = urlsplit(self.path).path
            if self.command != "POST" or not content_type.startswith("application/json"):
                return answer
            with contextlib.suppress(ValueError, KeyError, TypeError):
                request, parsed = json.loads(body or b"{}"), json.loads(answer)
                if path.rstrip("/") == "/mcp":
                    return json.dumps(rewrite_mcp(faults, request, parsed)).encode()
                if path.startswith("/api/tools/"):
                    tool = path.rsplit("/", 1)[1]
                    envelope = faults.rewrite(tool, request, parsed)
                    if hasattr(faults, "rest"):
                        envelope = faults.rest(tool, request, envelope)
                    return json.dumps(envelope).encode()
            return answer

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = forward

    return Handler


@contextlib.contextmanager
def broken_proxy(upstream: str, faults: Faults):
    """Serve the proxy on a free port until the block ends; yield its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(upstream, faults))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
