"""Request bodies sent chunked, without Content-Length, are read as bodies (config/wsgi.py)."""

import io
import json

import requests

from config.wsgi import ChunkedBodies
from tests.config.nodes import gunicorn_node, manage


def seen_by(app: ChunkedBodies, environ: dict) -> tuple[str, bytes]:
    seen = {}

    def inner(environ, start_response):
        seen["length"] = environ.get("CONTENT_LENGTH", "")
        seen["body"] = environ["wsgi.input"].read()
        return []

    ChunkedBodies(inner)(environ, lambda *args: None)
    return seen["length"], seen["body"]


def chunked(body: bytes, **extra) -> dict:
    return {"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked",
            **extra}


def test_a_chunked_body_gets_its_length():
    assert seen_by(ChunkedBodies, chunked(b'{"a": 1}')) == ("8", b'{"a": 1}')


def test_a_chunked_body_over_the_limit_stays_over_it(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    length, body = seen_by(ChunkedBodies, chunked(b"x" * 100))
    assert length == "11" and body == b"x" * 11


def test_a_body_of_declared_length_or_an_unterminated_input_is_left_alone():
    assert seen_by(ChunkedBodies, chunked(b"abc", CONTENT_LENGTH="2")) == ("2", b"abc")
    environ = chunked(b"abc")
    environ["wsgi.input_terminated"] = False
    assert seen_by(ChunkedBodies, environ) == ("", b"abc")


def test_a_node_reads_a_chunked_tool_call_and_refuses_one_too_large(tmp_path):
    with gunicorn_node(tmp_path, MAX_REQUEST_BYTES="4096") as (base, env, _, _):
        printed = manage(env, "add_agent", "chunky")
        credentials = dict(line.split("=", 1) for line in printed.split() if "=" in line)
        token = requests.post(f"{base}/identity/o/api/token", timeout=30,
                              auth=(credentials["CLIENT_ID"], credentials["CLIENT_SECRET"]),
                              data={"grant_type": "client_credentials", "scope": "agentprocess"}).json()
        headers = {"Authorization": f"Bearer {token['access_token']}", "Content-Type": "application/json"}

        def call(tool: str, body: bytes) -> requests.Response:
            # A generator body goes out with Transfer-Encoding: chunked and no Content-Length.
            return requests.post(f"{base}/api/tools/{tool}", data=iter([body[:5], body[5:]]), headers=headers,
                                 timeout=30)

        answer = call("list_processes", json.dumps({"cursor": None}).encode())
        assert answer.request.headers.get("Transfer-Encoding") == "chunked"
        assert answer.status_code == 400, answer.text  # read, so its null cursor was seen and named
        assert any(issue.startswith("cursor") for issue in answer.json()["error"]["issues"])
        assert call("describe", b"{}").json()["ok"] is True
        big = call("upload", json.dumps({"fileName": "a", "contentType": "text/plain", "requestId": "r",
                                         "contentBase64": "A" * 8000}).encode())
        assert big.status_code == 413 and big.json()["error"]["issues"] == ["body: larger than 4096 bytes"]
        mcp = requests.post(f"{base}/mcp", data=iter([b'{"jsonrpc": "2.0", ', b'"id": 1, "method": "ping"}']),
                            headers={**headers, "Accept": "application/json"}, timeout=30)
        assert mcp.status_code == 200 and mcp.json()["result"] == {}
