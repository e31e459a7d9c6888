"""The protocol's errors as data: each carries its code, HTTP status and issues (spec §4.3)."""

from __future__ import annotations


class ToolError(Exception):
    code = "invalid"
    status = 400

    def __init__(self, message: str, issues: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.issues = list(issues) if issues else None

    def as_error(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.issues:
            error["issues"] = self.issues
        return error


class Invalid(ToolError):
    code = "invalid"
    status = 400


class TooLarge(Invalid):
    """A request body over the server's limit: `invalid`, sent with 413 Content Too Large (RFC 9110 §15.5.14)."""

    status = 413


class NotAccepted(ToolError):
    code = "not_accepted"
    status = 422


class Stale(ToolError):
    code = "stale"
    status = 409


class Conflict(ToolError):
    code = "conflict"
    status = 409


class Forbidden(ToolError):
    code = "forbidden"
    status = 403


class NotFound(ToolError):
    code = "not_found"
    status = 404


class Retry(ToolError):
    code = "retry"
    status = 503


def run_ended() -> Conflict:
    return Conflict("The run has ended; nothing more can be written to it.", ["run_ended"])


def database_unavailable() -> Retry:
    return Retry("The database is briefly unavailable; retry with the same requestId.")
