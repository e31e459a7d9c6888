"""HTTP on the standard library alone (urllib): a session that keeps cookies, and answers of every status.

The runner needs little of HTTP: GET and POST with a JSON or form body, basic authentication for a token
endpoint, cookies for a sign-in form, redirects followed or not, and every answer whatever its status (a
401 or a 404 is an answer to check, not an error). Needing nothing more keeps it runnable from one file
with Python alone. A request that gets no answer at all (refused, reset, timed out, malformed URL) raises
`HttpError`.

TLS uses the system's certificate store (`SSL_CERT_FILE` and `SSL_CERT_DIR` name others); the usual
`HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` apply.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json as jsonlib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from urllib.parse import urlencode, urlsplit

from . import __version__

TIMEOUT = 30
USER_AGENT = f"agentprocess-conformance/{__version__}"


class HttpError(Exception):
    """No HTTP answer: the server could not be reached, the connection failed or timed out, or the URL is not one."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.reason = reason


class Headers(Mapping):
    """HTTP headers, looked up without regard to case; a header sent twice reads as its values joined by ', '."""

    def __init__(self, pairs: Iterable[tuple[str, str]] | Mapping[str, str] = ()):
        self.values: dict[str, tuple[str, str]] = {}
        for name, value in (pairs.items() if isinstance(pairs, Mapping) else pairs):
            known = self.values.get(name.lower())
            self.values[name.lower()] = (name, f"{known[1]}, {value}" if known else str(value))

    def __getitem__(self, name: str) -> str:
        return self.values[name.lower()][1]

    def __iter__(self):
        return (name for name, _ in self.values.values())

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


@dataclass
class Request:
    """What was sent."""

    method: str
    url: str
    headers: Headers
    body: bytes | None


@dataclass
class Response:
    """What came back, whatever its status."""

    status_code: int
    headers: Headers
    content: bytes
    url: str
    request: Request

    @property
    def text(self) -> str:
        charset = "utf-8"
        for parameter in self.headers.get("Content-Type", "").split(";")[1:]:
            name, _, value = parameter.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.content.decode(charset, "replace")
        except LookupError:
            return self.content.decode("utf-8", "replace")

    def json(self):
        """The body as JSON; a ValueError when it is not JSON."""
        return jsonlib.loads(self.content)


class Cookies:
    """A session's cookies, by name."""

    def __init__(self):
        self.jar = CookieJar()

    def get(self, name: str, default: str | None = None) -> str | None:
        return next((cookie.value for cookie in self.jar if cookie.name == name), default)

    def as_dict(self) -> dict[str, str | None]:
        return {cookie.name: cookie.value for cookie in self.jar}


class StayHandler(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: the 3xx answer itself is returned."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


@dataclass
class Session:
    """Requests that share cookies; `hooks` are called with every response."""

    hooks: list[Callable[[Response], object]] = field(default_factory=list)
    cookies: Cookies = field(default_factory=Cookies)

    def __post_init__(self):
        cookies = urllib.request.HTTPCookieProcessor(self.cookies.jar)
        self.following = urllib.request.build_opener(cookies)
        self.staying = urllib.request.build_opener(cookies, StayHandler())

    def get(self, url: str, **options) -> Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options) -> Response:
        return self.request("POST", url, **options)

    def request(self, method: str, url: str, *, json=None, data: Mapping | None = None,
                headers: Mapping[str, str] | None = None, auth: tuple[str, str] | None = None,
                timeout: float = TIMEOUT, allow_redirects: bool = True) -> Response:
        """Send one request and return the answer of any status; raise HttpError when there is none."""
        sent = {"User-Agent": USER_AGENT, "Accept": "*/*"}
        body = None
        if json is not None:
            body = jsonlib.dumps(json, allow_nan=False).encode("utf-8")
            sent["Content-Type"] = "application/json"
        elif data is not None:
            body = urlencode(data).encode("utf-8")
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if auth is not None:
            pair = f"{auth[0]}:{auth[1]}".encode("latin-1", "replace")
            sent["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        for name, value in (headers or {}).items():
            sent = {key: known for key, known in sent.items() if key.lower() != name.lower()} | {name: value}
        request = Request(method, url, Headers(sent), body)
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise HttpError(url, "not an http or https URL")
        prepared = urllib.request.Request(url, data=body, headers=sent, method=method)
        opener = self.following if allow_redirects else self.staying
        try:
            try:
                with opener.open(prepared, timeout=timeout) as answer:
                    response = Response(answer.status, Headers(answer.headers.items()), answer.read(),
                                        answer.url, request)
            except urllib.error.HTTPError as answer:
                # Any status but 2xx arrives as this exception; to the runner it is an answer like another.
                content = b""
                if answer.fp is not None:
                    with contextlib.closing(answer):
                        content = answer.read()
                response = Response(answer.code, Headers((answer.headers or {}).items()), content,
                                    answer.filename or url, request)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise HttpError(f"{method} {url}", f"{type(reason).__name__}: {reason}") from None
        for hook in self.hooks:
            hook(response)
        return response
