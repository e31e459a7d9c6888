"""The runner's HTTP on the standard library: every status an answer, cookies kept, redirects as asked."""

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from agentprocess_conformance import exchanges, web


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *arguments):
        pass

    def answer(self, status: int, body: dict, headers=()):
        content = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(content)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(content)

    def do_GET(self):
        if self.path == "/sign-in":
            self.answer(200, {}, [("Set-Cookie", "csrftoken=abc; Path=/"), ("X-Twice", "one"), ("X-Twice", "two")])
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.answer(200, {"path": self.path, "cookie": self.headers.get("Cookie")})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        status = 401 if self.path == "/guarded" else 200
        self.answer(status, {"body": body, "type": self.headers.get("Content-Type"),
                             "authorization": self.headers.get("Authorization"), "mcp": self.headers.get("Mcp-Method")},
                    [("WWW-Authenticate", 'Bearer resource_metadata="x"')] if status == 401 else [])


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_any_status_is_an_answer_with_its_headers_and_body(server):
    answer = web.Session().post(f"{server}/guarded", json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
                                headers={"Mcp-Method": "ping"})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer resource_metadata="x"'
    assert answer.json() == {"body": '{"jsonrpc": "2.0", "id": 0, "method": "ping"}', "type": "application/json",
                             "authorization": None, "mcp": "ping"}


def test_a_form_with_basic_authentication(server):
    answer = web.Session().post(f"{server}/token", data={"grant_type": "client_credentials", "scope": "a b"},
                                auth=("id", "sécret"))
    sent = answer.json()
    assert sent["body"] == "grant_type=client_credentials&scope=a+b"
    assert sent["type"] == "application/x-www-form-urlencoded"
    assert base64.b64decode(sent["authorization"].removeprefix("Basic ")) == "id:sécret".encode("latin-1")


def test_cookies_are_kept_and_a_header_sent_twice_reads_as_one(server):
    session = web.Session()
    answer = session.get(f"{server}/sign-in")
    assert answer.headers.get("x-twice") == "one, two"
    assert session.cookies.get("csrftoken") == "abc"
    assert session.get(f"{server}/echo").json()["cookie"] == "csrftoken=abc"


def test_a_redirect_is_followed_or_returned_as_asked(server):
    session = web.Session()
    assert session.get(f"{server}/moved").json()["path"] == "/echo"
    stayed = session.get(f"{server}/moved", allow_redirects=False)
    assert stayed.status_code == 302 and stayed.headers["Location"] == "/echo"


def test_no_answer_at_all_is_an_http_error(server):
    with pytest.raises(web.HttpError, match="ConnectionRefusedError"):
        web.Session().get("http://127.0.0.1:1/")
    with pytest.raises(web.HttpError, match="not an http or https URL"):
        web.Session().get("file:///etc/hostname")


def test_every_exchange_of_a_logged_session_is_kept(server):
    exchanges.session().post(f"{server}/token", data={"client_secret": "s3cret"})
    kept = exchanges.LOG.last()
    assert (kept.method, kept.path, kept.status) == ("POST", "/token", 200)
    assert kept.request == "client_secret=[redacted]"
