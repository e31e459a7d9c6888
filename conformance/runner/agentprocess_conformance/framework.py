"""Checks, the sections that run them, and their results.

A section is one scenario against the server. It declares its checks up front, so a report always
lists every check, and runs them in order: an assertion that fails inside a `with rec.check(...)` block
fails that check and the scenario goes on; a failure outside any block ends the scenario, and every
check it had not reached fails with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from .calls import Nonconformance
from .exchanges import LOG
from .transport import TransportError

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    spec: str


@dataclass
class Result:
    section: Section
    check: Check
    status: str
    message: str = ""
    seconds: float = 0.0
    # The HTTP exchanges that led to a failure, most recent last (exchanges.Exchange.as_json()).
    exchanges: list[dict] = field(default_factory=list)


class Skip(Exception):
    """This check (or the rest of the section) cannot run against this server, for the reason given."""


@dataclass
class Section:
    key: str
    title: str
    spec: str
    checks: tuple[Check, ...]
    run: Callable


SECTIONS: list[Section] = []


def section(key: str, title: str, spec: str, checks: list[tuple[str, str, str]]):
    """Register a scenario function as a section declaring `checks`: (id, title, spec reference) each."""

    def register(function: Callable) -> Callable:
        SECTIONS.append(Section(key, title, spec, tuple(Check(*check) for check in checks), function))
        return function

    return register


def explain(exc: BaseException) -> str:
    """Say what went wrong in one line: the server's answer for a nonconformance, the type for anything else."""
    if isinstance(exc, Nonconformance | TransportError | Skip):
        return str(exc)
    if isinstance(exc, AssertionError):
        return str(exc) or "assertion failed"
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Recorder:
    """The results of one section, reported as each check completes."""

    section: Section
    on_result: Callable[[Result], None] = lambda result: None
    results: dict[str, Result] = field(default_factory=dict)
    # The last exchange before the section began: a failure reports the section's exchanges that led to it.
    first_exchange: int = field(default_factory=lambda: LOG.last_number)

    def declared(self, check_id: str) -> Check:
        for check in self.section.checks:
            if check.id == check_id:
                return check
        raise KeyError(f"{check_id} is not a check of section {self.section.key}")

    def record(self, check_id: str, status: str, message: str = "", seconds: float = 0.0,
               since: int | None = None, exchanges: list | None = None) -> None:
        """Record a check's result; a failure keeps the given exchanges, else the last ones since `since`."""
        if check_id in self.results:
            return
        result = Result(self.section, self.declared(check_id), status, message, seconds)
        if status == FAILED and (exchanges or since is not None):
            result.exchanges = [exchange.as_json() for exchange in (exchanges or LOG.since(since))]
        self.results[check_id] = result
        self.on_result(result)

    @contextmanager
    def check(self, check_id: str):
        self.declared(check_id)
        started = time.monotonic()
        try:
            yield
        except Skip as exc:
            self.record(check_id, SKIPPED, str(exc), time.monotonic() - started)
        except Exception as exc:
            # A check may know which exchanges carried the fault (the answers section's ledger).
            self.record(check_id, FAILED, explain(exc), time.monotonic() - started, since=self.first_exchange,
                        exchanges=getattr(exc, "exchanges", None))
        else:
            self.record(check_id, PASSED, "", time.monotonic() - started)

    def skip(self, check_id: str, reason: str) -> None:
        self.record(check_id, SKIPPED, reason)

    def finish(self, *, status: str, message: str, since: int | None = None) -> None:
        """Give every check the scenario did not reach the status and message."""
        for check in self.section.checks:
            self.record(check.id, status, message, since=since)

    def ordered(self) -> list[Result]:
        return [self.results[check.id] for check in self.section.checks if check.id in self.results]


def run_section(section_: Section, context, on_result: Callable[[Result], None]) -> list[Result]:
    recorder = Recorder(section_, on_result)
    first = recorder.first_exchange
    try:
        section_.run(context, recorder)
    except Skip as exc:
        recorder.finish(status=SKIPPED, message=str(exc))
    except Exception as exc:
        recorder.finish(status=FAILED, message=f"not reached: {explain(exc)}", since=first)
    else:
        recorder.finish(status=FAILED, message="not reached: the scenario ended before this check", since=first)
    return recorder.ordered()
