"""Tool calls as one identity through one door, every answer checked against the official schemas."""

from __future__ import annotations

import uuid

from .schemas import Ledger, Schemas, check_envelope
from .transport import Envelope

WRITES = frozenset({"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"})


class Nonconformance(AssertionError):
    """The server answered otherwise than the protocol says."""


def request_id() -> str:
    return str(uuid.uuid4())


def describe_error(envelope: Envelope) -> str:
    error = envelope.error
    issues = error.get("issues")
    text = f"{error.get('code')}: {error.get('message')}"
    return text + (f" {issues}" if issues else "")


class Caller:
    """One identity (an agent or a person) calling tools through one door."""

    def __init__(self, name: str, door, schemas: Schemas, ledger: Ledger, *, kind: str):
        self.name = name
        self.door = door
        self.schemas = schemas
        self.ledger = ledger
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}>"

    def call(self, tool: str, **arguments) -> Envelope:
        """Call tool and return its envelope, whatever it says."""
        envelope = self.door.call_tool(tool, arguments)
        check_envelope(self.schemas, self.ledger, tool, envelope.body, f"{tool} ({self.name}, {envelope.door})")
        return envelope

    def ok(self, tool: str, **arguments):
        """Call tool and return its data; an error answer is a nonconformance."""
        envelope = self.call(tool, **arguments)
        if not envelope.ok:
            raise Nonconformance(f"{tool} by {self.name} was refused: {describe_error(envelope)}")
        return envelope.data

    def write(self, tool: str, **arguments):
        """Call a write with a new requestId unless one is given, and return its data."""
        arguments.setdefault("requestId", request_id())
        return self.ok(tool, **arguments)

    def fails(self, tool: str, code: str, **arguments) -> dict:
        """Call tool expecting the error code; return the error. Writes get a new requestId unless given."""
        if tool in WRITES:
            arguments.setdefault("requestId", request_id())
        envelope = self.call(tool, **arguments)
        if envelope.ok:
            raise Nonconformance(f"{tool} by {self.name} succeeded; expected {code}")
        if envelope.error.get("code") != code:
            raise Nonconformance(f"{tool} by {self.name} answered {describe_error(envelope)}; expected {code}")
        return envelope.error

    def conflict(self, tool: str, issue: str, **arguments) -> dict:
        """Call tool expecting `conflict` with exactly the one issue (tools.md names these issues)."""
        error = self.fails(tool, "conflict", **arguments)
        if error.get("issues") != [issue]:
            raise Nonconformance(f"{tool} by {self.name}: conflict with issues {error.get('issues')}; expected [{issue!r}]")
        return error
