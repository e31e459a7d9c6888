"""Every HTTP exchange the runner makes, kept so that a failed check can show the ones that led to it.

Each HTTP session the runner opens comes from `session()`, whose response hook records the exchange:
method, path, status and both bodies, with credentials redacted (no header is kept; body members such
as `client_secret`, `password`, `access_token` and claim `token`s, and any `Bearer …` text, are replaced).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from .web import Response, Session

# How many exchanges are kept in all, and how many a failed check reports.
KEPT = 400
REPORTED = 6
BODY_CHARACTERS = 4000
REDACTED = "[redacted]"
SECRET_MEMBERS = frozenset({"client_secret", "password", "access_token", "refresh_token", "id_token", "token",
                            "csrfmiddlewaretoken"})
# A bearer token or claim token that travels inside text (a JSON-RPC body, a form) rather than a member.
BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+")


@dataclass
class Exchange:
    number: int
    method: str
    path: str
    status: int
    request: object
    response: object
    tool: str | None = None
    date: str | None = None

    def as_json(self) -> dict:
        found = {"method": self.method, "path": self.path, "status": self.status, "request": self.request,
                 "response": self.response}
        if self.tool:
            found["tool"] = self.tool
        return found


class Log:
    """The most recent exchanges, numbered in the order they were made."""

    def __init__(self, kept: int = KEPT):
        self.entries: deque[Exchange] = deque(maxlen=kept)
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()

    @property
    def last_number(self) -> int:
        with self.lock:
            return self.entries[-1].number if self.entries else 0

    def add(self, response: Response) -> None:
        request = response.request
        parts = urlsplit(request.url or "")
        path = parts.path + (f"?{redact_query(parts.query)}" if parts.query else "")
        body = decoded(request.body, request.headers.get("Content-Type", ""))
        with self.lock:
            self.entries.append(Exchange(
                number=next(self.numbers), method=request.method or "", path=path, status=response.status_code,
                request=body, response=decoded(response.content, response.headers.get("Content-Type", "")),
                tool=tool_of(body, parts.path), date=response.headers.get("Date")))

    def last(self) -> Exchange | None:
        with self.lock:
            return self.entries[-1] if self.entries else None

    def numbered(self, numbers) -> list[Exchange]:
        """The exchanges with these numbers that are still kept, in order."""
        wanted = set(numbers)
        with self.lock:
            return [entry for entry in self.entries if entry.number in wanted]

    def since(self, number: int, limit: int = REPORTED) -> list[Exchange]:
        """The last `limit` exchanges made after exchange `number`."""
        with self.lock:
            found = [entry for entry in self.entries if entry.number > number]
        return found[-limit:]


LOG = Log()


def session() -> Session:
    """An HTTP session whose every exchange goes into the log."""
    return Session(hooks=[LOG.add])


def tool_of(body, path: str) -> str | None:
    if isinstance(body, dict) and body.get("method") == "tools/call":
        return str((body.get("params") or {}).get("name"))
    if isinstance(body, dict) and body.get("method"):
        return str(body["method"])
    return None


def decoded(raw, content_type: str):
    """The body as JSON when it parses, else as text (a form's fields redacted), shortened and redacted."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    kind = content_type.split(";")[0].strip().lower()
    if kind == "text/event-stream":
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = events[-1] if events else text
    try:
        return redact(json.loads(text), text_limit=BODY_CHARACTERS)
    except ValueError:
        pass
    if kind == "application/x-www-form-urlencoded":
        return redact_query(text)
    return BEARER.sub(r"\1" + REDACTED, text[:BODY_CHARACTERS])


def redact(value, *, text_limit: int):
    if isinstance(value, dict):
        return {key: (REDACTED if key in SECRET_MEMBERS and value[key] else redact(item, text_limit=text_limit))
                for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, text_limit=text_limit) for item in value]
    if isinstance(value, str):
        shortened = value if len(value) <= text_limit else value[:text_limit] + "…"
        return BEARER.sub(r"\1" + REDACTED, shortened)
    return value


def redact_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{key}={REDACTED if key in SECRET_MEMBERS else value}" for key, value in pairs)
