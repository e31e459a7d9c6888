"""The rows of a run as this process's last write to it left them, to decide its next write without
reading them again.

A write to a run under `base.sql.optimistic` reads the run, its steps and the lease its token names,
decides, and is applied by one statement only if the run is still as read (its guard). When this
process made the run's last write, it already holds what that read would return: `remember` keeps
the rows once the write is applied, and `recall` hands them to the next write in place of the read
(runs.store.load). The guard is what it was, with the run's `updated_at` added to its `revision`: if
any other write moved the run since (another process, a timer's catch-up, a person), the guard finds
the run changed, nothing is written, and the write forgets the snapshot, reads the run and decides
again. Every change to a run or its steps is a save of the run (runs.store.save), which moves both;
a lease never changes once written.

Two things the read would have told the write come another way:
- the requestId: not looked up. Every write applied stores its record in its one statement, so a
  replay's record INSERT fails on its unique key and the call answers with the recorded result
  (runs.idempotency), as a new run's twin does;
- anything but a write applied (a refusal, an error, a check to ask): never answered from a snapshot.
  The write reads the run and decides again (`sql.Moved`), so such an answer stands on the database.

Values are kept as the database gives them back, so a write decides the same whichever way its rows
came: JSON documents as jsonb stores them (keys in its order, an integral float written with an
exponent as an integer, -0.0 as 0.0), times in UTC, choices as plain strings. A value whose stored
form is not certain (a key that is not a string, a type JSON has not) keeps no snapshot. Each process
keeps at most `settings.RUN_SNAPSHOTS` runs, the least recently used going first (0: none).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import operator
import threading
from collections import OrderedDict
from decimal import Decimal

from django.conf import settings
from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS
from django.db.models import DateTimeField, JSONField
from django.dispatch import receiver

from base import backend, json_text, keys, sending, sql, tracked

from .models import RUN_REPLACED, IdempotencyRecord, Lease, Run, RunStep

log = logging.getLogger(__name__)


class _Offer(threading.local):
    offered: bool = False  # inside `offered()`: the next load may take a snapshot
    used: int | None = None  # the run whose snapshot the current write stands on


_offer = _Offer()
_lock = threading.Lock()
_runs: OrderedDict = OrderedDict()  # run key: Snapshot
_by_lease: dict[str, int] = {}  # a kept lease's public id: its run's key
_keys_ahead: dict = {}  # model: keys taken from its sequence ahead, for rows a snapshot names
KEYS_AHEAD = 32


# The largest run data a snapshot keeps, in characters of JSON: a process keeps at most
# RUN_SNAPSHOTS × this much of it (and the runs' other rows, which are small).
SNAPSHOT_DATA_CHARACTERS = 8 * 1024


class Row:
    """One row of a snapshot: its values in field order (compared with an instance's), and the same by
    attname (each instance of it starts as a copy of this dict)."""

    __slots__ = ("by_name", "values")

    def __init__(self, model, values: tuple):
        self.values = values
        self.by_name = dict(zip(_plan(model).attnames, values, strict=True))


class Snapshot:
    __slots__ = ("data", "data_characters", "leases", "organization_id", "revision", "run", "steps")

    def __init__(self, run: Row, steps: dict[int, Row], leases: dict[str, Row], data_characters: int):
        self.run, self.steps, self.leases, self.data_characters = run, steps, leases, data_characters
        index = _plan(Run).index
        self.organization_id, self.revision, self.data = (
            run.values[index["organization_id"]], run.values[index["revision"]], run.values[index["data"]]
        )


class ReadFirst(sql.Moved):
    """An answer that is not a write applied was decided on a snapshot: read the run and decide again.
    The snapshot may well be the run as it is, so it is kept."""


def enabled() -> bool:
    """Whether writes keep and take snapshots: only where they can stand on one, optimistic writes on
    PostgreSQL (a write that locks its run reads it under the lock). Asked several times a write, it is
    worked out once, and again when one of the settings it stands on changes."""
    global _enabled
    if _enabled is None:
        _enabled = settings.RUN_SNAPSHOTS > 0 and settings.OPTIMISTIC_WRITES and sending.postgres()
    return _enabled


_enabled: bool | None = None


@receiver(setting_changed)
def _settings_changed(setting, **_signal) -> None:
    global _enabled
    if setting in ("RUN_SNAPSHOTS", "OPTIMISTIC_WRITES", "DATABASES"):
        _enabled = None


class offered:
    """Let the write inside take a snapshot in place of its read (`recall`); on leaving, `in_use` is reset.
    A class, not a generator: every write enters it."""

    __slots__ = ("allow",)

    def __init__(self, allow: bool = True):
        self.allow = allow

    def __enter__(self):
        _offer.offered, _offer.used = self.allow and enabled(), None

    def __exit__(self, *_exc):
        _offer.offered, _offer.used = False, None


def in_use() -> bool:
    """Whether the current write stands on a snapshot rather than on rows it read."""
    return _offer.used is not None


def recall(run_id: int | None, *, lease_id: str | None, organization_id: int | None, also, leases: int):
    """The rows a write's load would read, from the snapshot of its run: (run, steps, also's rows, lease
    keys), each instance fresh; None when there is none to take, and the write reads."""
    if not _offer.offered:
        return None
    _offer.offered = False  # one load per write
    with _lock:
        if run_id is None:
            run_id = _by_lease.get(lease_id)
        snapshot = _runs.get(run_id)
        if snapshot is not None:
            _runs.move_to_end(run_id)
    if snapshot is None or (organization_id is not None and snapshot.organization_id != organization_id):
        return None
    found = []
    for model, where, params, _suffix in also:
        if model is IdempotencyRecord:
            found.append([])  # a replay's record INSERT fails on its unique key (runs.idempotency)
        elif model is Lease and where == "t.public_id = %s" and params[0] in snapshot.leases:
            found.append(_built(Lease, [snapshot.leases[params[0]]]))
        else:
            return None
    reserved = keys_ahead(Lease, leases) if leases else []
    _offer.used = run_id
    [run] = _built(Run, [snapshot.run], remembered=RUN_REPLACED)
    return run, _built(RunStep, list(snapshot.steps.values()), remembered=frozenset()), found, reserved


def read_as(run) -> dict:
    """What the run's guard compares: its revision, and on a snapshot its `updated_at` too, so that a run
    whose history is not the one the snapshot saw (a database restored behind a running process) is read."""
    if in_use():
        return {"revision": run.revision, "updated_at": run.updated_at}
    return {"revision": run.revision}


def remember(txn) -> None:
    """Keep the rows of a write just applied, as the database now holds them, for the run's next write.
    Runs once the write is applied: whatever goes wrong here costs the next write a read, never this one
    its answer."""
    if not enabled():
        return
    try:
        _remember(txn)
    except Exception:
        log.exception("run %s: no snapshot kept", txn.run.pk)
        forget(txn.run.pk)


def _remember(txn) -> None:
    run = txn.run
    run_id = run.id
    steps = list(txn.steps.values())
    if run.is_over or any(row.id is None for row in steps):
        forget(run_id)  # an ended run takes no more writes
        return
    with _lock:
        kept = _runs.get(run_id)
    # The data's size is measured once for each document: a write that left it as it was keeps the figure.
    data = run.data
    characters = kept.data_characters if kept is not None and kept.data is data else len(json_text.dumps(data))
    if characters > SNAPSHOT_DATA_CHARACTERS:
        forget(run_id)
        return
    kept_steps = kept.steps if kept is not None else {}
    kept_leases = kept.leases if kept is not None else {}
    try:
        run_row = Row(Run, _stored(Run, run, same_data=txn.loaded_data,
                                   data_before=kept.data if kept is not None else None))
        rows = {row.id: _kept_row(RunStep, row, kept_steps.get(row.id)) for row in steps}
        lease_at = _plan(RunStep).index["lease_id"]
        held = {row.values[lease_at] for row in rows.values()}
        # A lease never changes once written: one kept already is kept as it is.
        leases = {lease.public_id: kept_leases.get(lease.public_id) or Row(Lease, _stored(Lease, lease))
                  for lease in [*txn.known_leases, *txn.new_leases] if lease.id in held}
    except Unsure:
        forget(run_id)
        return
    snapshot = Snapshot(run_row, rows, leases, characters)
    with _lock:
        kept = _runs.get(run_id)
        if kept is not None and kept.revision >= snapshot.revision:
            return  # a later write's snapshot came first
        _drop(run_id)
        _runs[run_id] = snapshot
        for public_id in leases:
            _by_lease[public_id] = run_id
        while len(_runs) > settings.RUN_SNAPSHOTS:
            _drop(next(iter(_runs)))


def forget(run_id: int | None = None) -> None:
    """Drop the snapshot of `run_id`, or of the run the current write stood on."""
    run_id = run_id if run_id is not None else _offer.used
    if run_id is None:
        return
    with _lock:
        _drop(run_id)


def forget_all() -> None:
    with _lock:
        _runs.clear()
        _by_lease.clear()
        _keys_ahead.clear()


def _drop(run_id: int) -> None:
    snapshot = _runs.pop(run_id, None)
    if snapshot is not None:
        for public_id in snapshot.leases:
            if _by_lease.get(public_id) == run_id:
                del _by_lease[public_id]


def keys_ahead(model, count: int) -> list[int]:
    """`count` new keys from `model`'s sequence, taken KEYS_AHEAD at a time (one round trip each), so
    that the rows a snapshot names have their keys without a read of their own. PostgreSQL only."""
    with _lock:
        kept = _keys_ahead.setdefault(model, [])
        if len(kept) >= count:
            taken = kept[:count]
            del kept[:count]
            return taken
    [rows] = sql.fetch_many([keys.next_ids(model, max(count, KEYS_AHEAD))])
    fresh = [key for (key,) in rows]
    with _lock:
        _keys_ahead.setdefault(model, []).extend(fresh[count:])
    return fresh[:count]


# --- values as the database gives them back ----------------------------------------------------------


class Unsure(ValueError):
    """A value whose stored form is not certain: the write keeps no snapshot."""


class _Plan:
    """How one model's rows are kept: its values read from an instance's `__dict__` in field order (as
    base.backend loads them), and where the values that need more than keeping are."""

    def __init__(self, model):
        fields = model._meta.concrete_fields
        self.attnames = tuple(field.attname for field in fields)
        self.read = operator.itemgetter(*self.attnames)
        self.index = {name: i for i, name in enumerate(self.attnames)}
        self.json = tuple(i for i, field in enumerate(fields) if isinstance(field, JSONField))
        # A write's own copy of each document but the run's data, which a write only ever replaces.
        self.copied_names = tuple(fields[i].attname for i in self.json if fields[i].attname != "data")
        self.times = tuple(i for i, field in enumerate(fields) if isinstance(field, DateTimeField))
        self.other = tuple(i for i in range(len(fields)) if i not in self.json and i not in self.times)
        self.data = self.index.get("data")
        # A row's values but the key, as base.tracked keeps an instance's values as loaded.
        written = [self.index[name] for name in tracked.written_fields(model)]
        self.written = operator.itemgetter(*written)
        self.looks: dict[tuple, tuple] = {}  # a row's value types: what `_stored` looks at (`learn`)

    def learn(self, types: tuple):
        """What `_stored` does to a row whose values are of `types`, which alone decide it: the documents
        to put in jsonb's form, the times to put in UTC, and the values to turn into the plain type they
        stand for (a choice's member); `_AS_READ` for none of them. Unsure of a type no column gives back."""
        documents = tuple(i for i in self.json if types[i] is not type(None))
        times = []
        for i in self.times:
            if types[i] is dt.datetime:
                times.append(i)
            elif types[i] is not type(None):
                raise Unsure("a time not in a known zone")
        others = []
        for i in self.other:
            kind = types[i]
            if kind in _PLAIN_COLUMN_TYPES:
                continue
            if issubclass(kind, str):
                others.append((i, str.__str__))  # a choice's member: the string it stands for
            elif issubclass(kind, int) and not issubclass(kind, bool):
                others.append((i, int.__int__))
            else:
                raise Unsure(f"a column value of type {kind.__name__}")
        looks = (documents, tuple(times), tuple(others)) if documents or times or others else _AS_READ
        if len(self.looks) >= KEPT_LOOKS:
            self.looks.clear()
        self.looks[types] = looks
        return looks


# A row's value types each plan keeps what to do for (`_Plan.looks`): a model's rows come in a few.
KEPT_LOOKS = 64
_AS_READ = object()  # `_Plan.learn`: a row of these types is kept as it is
_PLAIN_COLUMN_TYPES = frozenset({type(None), str, int, bool, float})


@functools.cache
def _plan(model) -> _Plan:
    return _Plan(model)


def _built(model, rows: list, *, remembered: frozenset | None = None) -> list:
    """Instances of `model` from a snapshot's rows, each with its own copy of every JSON value but the
    run's data. `remembered`: each also remembered as loaded (base.tracked), with those fields compared
    by identity, its values as loaded taken from the row itself, which nothing changes."""
    plan = _plan(model)
    built = backend.loaded_from(model, DEFAULT_DB_ALIAS, [row.by_name for row in rows])
    if plan.copied_names:
        for obj in built:
            values = obj.__dict__
            for name in plan.copied_names:
                value = values[name]
                if value is not None:
                    values[name] = tracked.copied(value)
    if remembered is not None:
        written = plan.written
        for obj, row in zip(built, rows, strict=True):
            tracked.remember_as(obj, written(row.values), by_identity=remembered)
    return built


def _kept_row(model, obj, kept: Row | None) -> Row:
    """`obj`'s row as the database gives it back: `kept`, the last snapshot's, when nothing in it changed."""
    values = _stored(model, obj, kept.values if kept is not None else None)
    return kept if kept is not None and values is kept.values else Row(model, values)


def _stored(model, obj, kept: tuple | None = None, *, same_data=None, data_before=None) -> tuple:
    """`obj`'s values as the database gives them back, in field order. `kept`: the row as the last
    snapshot stored it, returned as it is when nothing in it changed (runs.store writes a value only
    where it differs, by `==`, from what was read, so an equal value is the stored one). `same_data`:
    the run's data as the write read it, stored as it is; `data_before`: the run's data as the last
    snapshot stored it, whose parts a new document holds as they are (`_as_jsonb_after`)."""
    plan = _plan(model)
    try:
        values = plan.read(obj.__dict__)
    except KeyError:
        raise Unsure("a deferred field") from None
    if kept is not None and values == kept:
        return kept
    types = tuple(map(type, values))
    looks = plan.looks.get(types)
    if looks is None:
        looks = plan.learn(types)
    if looks is _AS_READ:
        return values  # nothing in it a database would give back otherwise
    documents, times, others = looks
    values = list(values)
    for i in documents:
        value = values[i]
        if value is not same_data:
            values[i] = _as_jsonb(value) if data_before is None or i != plan.data else _as_jsonb_after(value, data_before)
    for i in times:
        value = values[i]
        if value.tzinfo is not dt.UTC:
            if value.tzinfo is None:
                raise Unsure("a time not in a known zone")
            values[i] = value.astimezone(dt.UTC)
    for i, plain in others:
        values[i] = plain(values[i])
    return tuple(values)


# JSON values jsonb gives back as they are written.
_AS_THEY_ARE = frozenset({str, int, bool, type(None)})
# The order jsonb gives an object's keys back in, by the keys as written: documents of one shape (a
# step's record, a run's data) come back to the same few key sets.
_JSONB_ORDER: dict[tuple, tuple] = {}
_JSONB_ORDERS = 512


def _jsonb_order(keys: tuple) -> tuple:
    if any(type(key) is not str for key in keys):
        raise Unsure("an object key that is not a string")
    if all(key.isascii() for key in keys):
        ordered = tuple(sorted(keys, key=lambda key: (len(key), key)))  # an ASCII key's bytes are its characters
    else:
        ordered = tuple(sorted(keys, key=lambda key: (len(key.encode()), key.encode())))
    if len(_JSONB_ORDER) >= _JSONB_ORDERS:
        _JSONB_ORDER.clear()
    _JSONB_ORDER[keys] = ordered
    return ordered


def _as_jsonb_after(value, before):
    """`_as_jsonb(value)`, where each part of `value` that is the very object `before` holds at the same
    place is taken as it is: `before` is a document as jsonb gives it back, which nothing changes, and a
    write that replaces the run's data keeps every part it did not change (runs.models.RUN_REPLACED)."""
    if value is before:
        return before
    kind = type(value)
    if kind is dict and type(before) is dict:
        keys = tuple(value)
        ordered = _JSONB_ORDER.get(keys)
        if ordered is None:
            ordered = _jsonb_order(keys)
        return {key: item if type(item) in _AS_THEY_ARE else _as_jsonb_after(item, before.get(key))
                for key in ordered for item in (value[key],)}
    if kind is list and type(before) is list:
        known = len(before)
        return [item if type(item) in _AS_THEY_ARE else _as_jsonb_after(item, before[i] if i < known else None)
                for i, item in enumerate(value)]
    return _as_jsonb(value)


def _as_jsonb(value):
    """A JSON value as jsonb stores it and gives it back: object keys shorter first, then by their
    UTF-8 bytes; numbers by their decimal text (a float's written text, `repr`'s or orjson's, spells the
    same number)."""
    kind = type(value)
    if kind is dict:
        keys = tuple(value)
        ordered = _JSONB_ORDER.get(keys)
        if ordered is None:
            ordered = _jsonb_order(keys)
        return {key: item if type(item) in _AS_THEY_ARE else _as_jsonb(item)
                for key in ordered for item in (value[key],)}
    if kind is list or kind is tuple:
        return [item if type(item) in _AS_THEY_ARE else _as_jsonb(item) for item in value]
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise Unsure("a number JSON cannot spell")
        text = repr(value)
        if "e+" in text:
            return int(Decimal(text))  # jsonb spells it in full digits, read back as an integer
        return 0.0 if value == 0 else value
    if kind in (str, int, bool) or value is None:
        return value
    raise Unsure(f"a JSON value of type {kind.__name__}")
