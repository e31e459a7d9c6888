"""Every write is done once per requestId (spec §4): its result is recorded with it, and a replay returns it.

A write runs in one transaction, or, on PostgreSQL, as reads in autocommit and one statement: guarded
for a write to a run, unguarded for a new run (`_optimistically`). A write to a run looks its requestId
up with the run, under its lock or again after a guard found the run moved, so a concurrent twin that
committed first is found and its result returned; a new run's twin fails on the record's unique key.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.identity import Identity
from base import backend, sql

from . import evaluation, leases, snapshots
from .canonical import canonical_json
from .errors import Conflict, ToolError
from .models import IdempotencyRecord, Run


class Replayed(Exception):
    def __init__(self, data: dict):
        self.data = data


@dataclass
class Write:
    identity: Identity
    tool: str
    request_id: str
    fingerprint: str
    looked_up: list = field(default_factory=list)

    def record_query(self) -> tuple:
        """The `sql.select_many` query for this requestId's record, to run with the write's first reads."""
        return (IdempotencyRecord, _RECORD_WHERE, [self.identity.organization.id, self.request_id], "")

    def recheck(self, found: list) -> None:
        """Call with the run locked: a concurrent twin may have committed while this one waited."""
        if found and self.replays:
            raise Replayed(_replay(found[0], self))

    @property
    def replays(self) -> bool:
        """Whether a recorded result may answer this call: never an agent's decide, which is always
        refused (spec §6 rule 4), even with the requestId of a person's decision."""
        return self.tool != "decide" or self.identity.is_human


@dataclass
class Outcome:
    data: dict
    run: Run | None = None
    lease: str | None = None
    error: ToolError | None = None


def _fingerprint(identity: Identity, tool: str, arguments: dict) -> str:
    payload = {"tool": tool, "by": identity.ref, "arguments": {k: v for k, v in arguments.items() if k != "requestId"}}
    return hashlib.sha256(canonical_json(payload)).hexdigest()


_RECORD_WHERE = "t.organization_id = %s AND t.request_id = %s"


def _record(identity: Identity, request_id: str) -> IdempotencyRecord | None:
    found = sql.select(IdempotencyRecord, _RECORD_WHERE, [identity.organization.pk, request_id])
    return found[0] if found else None


def _replay(record: IdempotencyRecord, write: Write) -> dict:
    if record.tool != write.tool or record.fingerprint != write.fingerprint:
        raise Conflict("This requestId was already used with other arguments.", ["request_id_reused"])
    data = record.result["data"]
    if record.result.get("lease"):
        data = {**data, "token": leases.token_for(record.result["lease"])}
    return data


# Writes to one run look their requestId up under the run lock (_Write.recheck), so they skip the first look.
RUN_WRITES = frozenset({"claim", "renew", "submit", "escalate", "decide", "cancel", "send_event"})
# Writes that only add rows nothing else knows of yet (a new run and its rows, an uploaded file): applied
# by one statement without a transaction block, and without a guard (base.sql.optimistic(new_rows=True)).
NEW_ROW_WRITES = frozenset({"start_run", "upload"})


@dataclass
class Guess:
    """What a new write's first round trip would find, as this process found it last (`looked_up`), and
    the SELECT that finds a row only while that still holds (`guard`, text and params): the write is
    decided on it and applied by one statement past that guard, without the round trip. `wrong` is
    called when the guard found it changed."""

    looked_up: list
    guard: tuple[str, list]
    wrong: Callable[[], None]


def once(identity: Identity, tool: str, arguments: dict, perform, *, lookups=(), guess: Guess | None = None) -> dict:
    """Run `perform(write)` in a transaction, once per requestId.

    `lookups` are (SELECT, params) to run with a new write's requestId look, in the same round trip;
    their rows are on `write.looked_up`. `guess`: what they found last, for a write of new rows to
    stand on without the look (`_on_a_guess`).
    """
    write = Write(identity, tool, arguments["requestId"], _fingerprint(identity, tool, arguments))
    try:
        outcome = None
        if guess is not None and tool in NEW_ROW_WRITES and optimistic_writes():
            outcome = _on_a_guess(write, perform, guess)
        if outcome is None:
            if tool not in RUN_WRITES:
                found, *write.looked_up = sql.select_many([write.record_query()], raw=lookups)
                if found:
                    return _replay(found[0], write)
            if (tool in RUN_WRITES or tool in NEW_ROW_WRITES) and optimistic_writes():
                outcome = _optimistically(write, perform, new_rows=tool in NEW_ROW_WRITES)
        if outcome is None:
            # The write's UPDATEs and INSERTs, its record among them, go to the database together.
            with transaction.atomic(), sql.deferred():
                outcome = _performed(write, perform)
    except Replayed as replayed:
        return replayed.data
    except IntegrityError:
        record = _record(identity, write.request_id)
        if record is None:
            raise
        return _replay(record, write)
    if outcome.error is not None:
        raise outcome.error
    return outcome.data


def _performed(write: Write, perform, *, read: bool = True) -> Outcome:
    """`perform(write)`, its record stored with its write. `read`: whether the write stands on rows it
    read; one that does not (a snapshot, a guess) answers only with a write applied."""
    try:
        outcome: Outcome = perform(write)
    except Exception:
        if not read or snapshots.in_use():
            # An answer that is not a write applied stands on rows read, never on a snapshot or a guess.
            raise snapshots.ReadFirst("decided without reading: read first") from None
        raise
    if outcome.error is not None and (not read or snapshots.in_use()):
        raise snapshots.ReadFirst("decided without reading: read first")
    if outcome.error is None:
        stored = {"data": outcome.data}
        if outcome.lease:
            data = dict(outcome.data)
            data.pop("token", None)  # a replay makes the token anew from the lease (`_replay`)
            stored = {"data": data, "lease": outcome.lease}
        sql.insert_later(backend.created(
            IdempotencyRecord,
            organization=write.identity.organization,
            request_id=write.request_id,
            tool=write.tool,
            fingerprint=write.fingerprint,
            result=stored,
            run=outcome.run,
        ))
    return outcome


# How often a write to a run is read and decided again when another write to the run came between.
OPTIMISTIC_ATTEMPTS = 3


def optimistic_writes() -> bool:
    """Whether writes to a run go without a transaction block (settings.OPTIMISTIC_WRITES, PostgreSQL)."""
    return settings.OPTIMISTIC_WRITES and sql.postgres()


def _optimistically(write: Write, perform, *, new_rows: bool = False) -> Outcome | None:
    """The write read and decided in autocommit and applied by one statement, if the run's revision is
    still the one read (base.sql.optimistic); read again when it moved. None when it must take the run's
    lock instead: another write kept moving the run, or the write needs what only a transaction gives.
    `new_rows`: a write that only adds rows, applied by its one statement without a guard; a twin
    with the same requestId that came first makes its record's INSERT fail (IntegrityError, in `once`)."""
    for attempt in range(OPTIMISTIC_ATTEMPTS):
        # The first attempt may stand on this process's snapshot of the run (runs.snapshots); once it
        # finds the run moved, or has anything but a write to apply, it is read.
        with snapshots.offered(attempt == 0):
            try:
                with sql.optimistic(new_rows=new_rows), sql.deferred():
                    return _performed(write, perform)
            except sql.Moved as moved:
                if not isinstance(moved, snapshots.ReadFirst):
                    snapshots.forget()  # the run moved since: the snapshot is of a run that is no more
                continue
            except sql.NeedsLock:
                snapshots.forget()
                return None
    return None


def _on_a_guess(write: Write, perform, guess: Guess) -> Outcome | None:
    """A write of new rows decided on `guess` and applied by one statement past its guard, its requestId
    not looked up: a replay's record INSERT fails on its unique key (IntegrityError, in `once`). None
    when the guard found the guess changed, or when the answer is not a write applied: the write then
    looks up first and is decided again."""
    write.looked_up = guess.looked_up
    try:
        with sql.optimistic(new_rows=True), sql.deferred():
            sql.guard_found(*guess.guard)
            return _performed(write, perform, read=False)
    except snapshots.ReadFirst:
        return None
    except sql.Moved:
        guess.wrong()
        return None
    except sql.NeedsLock:
        return None


def once_checked(identity: Identity, tool: str, arguments: dict, perform) -> dict:
    """Run a write that may meet a check (check-1), asking the evaluator between two transactions."""
    # The first pass stops at the check with NeedsCheck and rolls back; the evaluator is asked with no
    # lock held; the second pass applies the answer only if the run still shows what the model saw.
    try:
        return once(identity, tool, arguments, functools.partial(perform, answered=None))
    except evaluation.NeedsCheck as needed:
        answered = evaluation.evaluate(needed.request)
    return once(identity, tool, arguments, functools.partial(perform, answered=answered))


