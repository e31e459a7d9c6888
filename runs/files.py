"""Short-lived signed download links for uploaded files (spec §5)."""

from __future__ import annotations

import contextvars
import hmac
import re
import time

from django.conf import settings
from django.urls import reverse
from django.utils.crypto import salted_hmac

from base.params import read_integer

_SALT = "agentprocess.file-url"

# RFC 9110 §8.3.1: type "/" subtype *( OWS ";" OWS parameter ), every name a token.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PARAMETER = rf'{_TOKEN}=(?:{_TOKEN}|"(?:[\t !#-\[\]-~]|\\[\t -~])*")'
MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_PARAMETER})*")


# What a header value can carry as it is: visible ASCII and spaces.
_HEADER_TEXT = re.compile("[ -~]+")


def content_type_problem(content_type: str) -> str | None:
    """Say why `content_type` can never be a Content-Type header, or return None when it may be one.

    Text that is no media type but fits a header is kept and served as application/octet-stream.
    """
    if _HEADER_TEXT.fullmatch(content_type):
        return None
    return "must be a media type such as text/plain (RFC 9110): visible ASCII, no controls or line breaks"


def served_content_type(stored: str) -> str:
    """The Content-Type to serve a stored upload with: its own when it is a media type, else octet-stream."""
    return stored if stored and MEDIA_TYPE.fullmatch(stored) else "application/octet-stream"

class _Serving:
    """The request being served and, once a link needs it, its scheme and host."""

    __slots__ = ("request", "root")

    def __init__(self, request) -> None:
        self.request = request
        self.root: str | None = None


# What makes links in run data absolute, for the request being served.
_serving: contextvars.ContextVar[_Serving | None] = contextvars.ContextVar("serving", default=None)


class serving:
    """Links made inside start with `request`'s scheme and host (unless PUBLIC_URL is set). A class, not a
    generator: every tool call enters it."""

    __slots__ = ("request", "token")

    def __init__(self, request):
        self.request = request

    def __enter__(self):
        self.token = _serving.set(_Serving(self.request))

    def __exit__(self, *_exc):
        _serving.reset(self.token)


def request_root() -> str:
    """PUBLIC_URL, else the scheme and host of the request being served, else empty."""
    if settings.PUBLIC_URL:
        return settings.PUBLIC_URL
    current = _serving.get()
    if current is None:
        return ""
    if current.root is None:  # worked out at the first link: most calls make none
        current.root = current.request.build_absolute_uri("/").rstrip("/")
    return current.root


def _signature(public_id: str, expires: int) -> str:
    return salted_hmac(_SALT, f"{public_id}:{expires}", algorithm="sha256").hexdigest()[:32]


def file_url(public_id: str, *, now: float | None = None) -> str:
    expires = int((now if now is not None else time.time()) + settings.FILE_URL_SECONDS)
    path = reverse("file-download", args=[public_id])
    return f"{request_root()}{path}?e={expires}&s={_signature(public_id, expires)}"


def signature_valid(public_id: str, expires: str, signature: str) -> bool:
    moment = read_integer(expires)
    if moment is None or moment < time.time():
        return False
    return hmac.compare_digest(_signature(public_id, moment), signature)


def with_urls(evidence: list[dict]) -> list[dict]:
    """Return evidence items with a fresh `url` on each file item."""
    return [{**item, "url": file_url(item["ref"])} if item.get("kind") == "file" else item for item in evidence]


def data_with_urls(data: dict) -> dict:
    """Return run data with a fresh signed `url` on every file evidence item, current and in history."""
    steps = {}
    for step_id, record in data.get("steps", {}).items():
        evidence, history = record.get("evidence"), record.get("history")
        if evidence or any(old.get("evidence") for old in history or ()):
            record = dict(record)  # a copy only where a url is added: the rest is the data's own
            if evidence:
                record["evidence"] = with_urls(evidence)
            if history:
                record["history"] = [
                    {**old, "evidence": with_urls(old["evidence"])} if old.get("evidence") else old
                    for old in history
                ]
        steps[step_id] = record
    return {"inputs": data.get("inputs", {}), "steps": steps}
