"""Plain SQL for the hottest paths: model rows read and written without building an ORM query each time.

The ORM compiles every queryset anew; on a path that runs on every request that compilation costs
more than the database does. These helpers keep what Django would do (column names, the backend's
value converters and parameter adaptation) with a fixed statement text, built once per process.

Everything here stands on public APIs. On PostgreSQL a write's UPDATEs and INSERTs go together: as one
statement of data-modifying `WITH` queries (`one_statement`), bound on the server and prepared by
psycopg once its text has run `prepare_threshold` times on a connection (settings.DATABASES OPTIONS),
or, when larger than psycopg keeps parsed, as one simple query with each statement's values bound on
the client by psycopg's ClientCursor.mogrify. Several SELECTs go as one simple query the same way; a
statement sent alone is bound on the server and prepared like any other. Django's `transaction.atomic`
owns every BEGIN and COMMIT: nothing here begins or ends a transaction.

psycopg's pipeline mode would send several statements bound on the server, preparable, in one round
trip too; measured here (bench/inproc.py) it costs about twice the client's CPU of one simple query
for the two to four statements a write sends together, more than the server's planning it saves.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import operator
import threading
from contextlib import contextmanager

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import JSONField
from django.db.models import fields as model_fields
from psycopg import pq

from base import backend


class _Pending(threading.local):
    statements: list | None = None
    updates: dict | None = None  # (model, key): [its place in `statements`, the changes so far]


_pending = _Pending()


@contextmanager
def deferred():
    """Hold the UPDATEs and result-less INSERTs made inside and send them together at the end.

    On PostgreSQL they go as one query: one round trip instead of one each. Use it only inside a
    transaction, around code that does not read back the rows it writes through here; an error in any
    of them is raised at the end, and the transaction rolls back as usual.
    """
    if _pending.statements is not None:
        yield
        return
    _pending.statements, _pending.updates = [], {}
    try:
        yield
        statements, _pending.statements = _pending.statements, None
        _send(statements)
    finally:
        _pending.statements = _pending.updates = None


@contextmanager
def _batched(statements):
    """A cursor that has run several statements, (text, params) each, in one round trip; for `nextset`.

    Several statements in one query take PostgreSQL's simple query protocol, so each one's parameters
    are bound on the client, as psycopg's ClientCursor.mogrify writes them, and the joined text goes
    with no parameters of its own. Its results come one after another (`nextset`).
    """
    db = connections[DEFAULT_DB_ALIAS]  # once, not through the proxy at each use
    db.ensure_connection()
    raw = psycopg.ClientCursor(db.connection)
    if _utc(db):
        raw.adapters.register_loader(_TIMESTAMPTZ, _C_TIMESTAMPTZ_LOADER)
    cursor = backend.wrapped_cursor(db, raw)
    try:
        with backend.database_errors(db):
            text = ";\n".join(raw.mogrify(statement, params) for statement, params in statements)
        cursor.execute(text)
        yield cursor
    finally:
        cursor.close()


# psycopg's own timestamptz loader, in C where psycopg has its C module: what a batch's rows are read with.
_TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid
_C_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ, pq.Format.TEXT)


def _utc(db) -> bool:
    """Whether psycopg's timestamptz loader reads values as Django's would on this connection.

    Django reads timestamptz with a loader of its own, in Python, that gives each datetime Django's
    time zone. Where that zone and the session's are both UTC, psycopg's loader gives the same
    datetimes, about twenty times faster. It is set on each batch's cursor, not on the connection:
    Django asks the connection's loader for its zone at every cursor it opens, and psycopg's has none.
    """
    return settings.USE_TZ and db.timezone is dt.UTC and db.connection.info.timezone is dt.UTC


# psycopg keeps a statement's parsed form, and may prepare it, only while its text is at most 4096
# characters and its parameters at most 50 (psycopg 3.1.11 release notes): a batch within both goes as
# one statement; a larger one, rarer, as one simple query of its statements (`_batched`).
ONE_STATEMENT_TEXT = 4096
ONE_STATEMENT_PARAMS = 50


def _send(statements: list) -> None:
    if not statements:
        return
    if postgres() and len(statements) > 1:
        if sum(len(params) for _text, params in statements) <= ONE_STATEMENT_PARAMS:
            text, params = one_statement(statements)
            if len(text) <= ONE_STATEMENT_TEXT:
                with connection.cursor() as cursor:
                    cursor.execute(text, params)
                return
        with _batched(statements):
            pass  # nothing to read back
        return
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)


def one_statement(statements: list) -> tuple[str, list]:
    """Several UPDATEs and INSERTs (no RETURNING), (text, params) each, as one statement.

    Each becomes a data-modifying `WITH` query, so the batch is one round trip, bound on the server and
    prepared like any statement sent alone once its text repeats (a write's shape does). PostgreSQL
    runs every part to completion with one snapshot, in an order of its own, and checks foreign keys at
    the end of the statement: the parts must not read or change the same rows (a write's batch never
    does: each row it writes, it writes once, and it reads nothing back). Rows inserted into one table
    with the same columns go as one INSERT of several rows, so their keys follow the order they were
    written in.
    """
    merged: dict[str, list] = {}  # statement text: [text, params, rows]
    for text, params in statements:
        if text.startswith("INSERT ") and text.endswith(")") and " RETURNING " not in text:
            found = merged.get(text)
            if found is not None:
                found[1] = [*found[1], *params]
                found[2] += 1
                continue
        merged[text if text.startswith("INSERT ") else f"{len(merged)}:{text}"] = [text, list(params), 1]
    parts, values = [], []
    for text, params, rows in merged.values():
        if rows > 1:
            head, _sep, row = text.rpartition(" VALUES ")
            text = f"{head} VALUES {', '.join([row] * rows)}"
        parts.append(f"w{len(parts)} AS ({text})")
        values.extend(params)
    return f"WITH {', '.join(parts)} SELECT 1", values


def execute(text: str, params: list) -> None:
    """Run one statement that returns no rows; inside `deferred()` it joins the write's batch."""
    _execute(text, params)


def _execute(text: str, params: list) -> None:
    if _pending.statements is not None:
        _pending.statements.append((text, params))
    else:
        _send([(text, params)])


# One process talks to one database, so what is built from its backend is built once.


@functools.cache
def postgres() -> bool:
    return connection.vendor == "postgresql"


@functools.cache
def columns(model, alias: str) -> str:
    """The model's concrete columns, qualified by `alias`, in field order (what `build` expects)."""
    quote = backend.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


@functools.cache
def _converters(model) -> list:
    plan = []
    for field in model._meta.concrete_fields:
        plan.append(backend.column_converters(field, model._meta.db_table, connection))
    return plan


def convert(model, values, db=None) -> list:
    """Turn raw column values (as the driver returned them) into Python values, as the ORM would."""
    db = db or connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each converter reads it without the proxy
    out = []
    for (col, converters), value in zip(_converters(model), values, strict=True):
        for converter in converters:
            value = converter(value, col, db)
        out.append(value)
    return out


def build(model, values, db=None):
    """A model instance from a row of `columns(model, ...)`, or None when the row's primary key is NULL.

    `db`, the connection wrapper, spares each row looking it up when many are built.
    """
    # A NULL key (the empty side of a LEFT JOIN) stays NULL through every converter: skip the work.
    if values[_pk_index(model)] is None:
        return None
    return model.from_db(DEFAULT_DB_ALIAS, None, convert(model, values, db))


@functools.cache
def _pk_index(model) -> int:
    return model._meta.concrete_fields.index(model._meta.pk)


def field_value(model, name: str, value):
    """Convert one raw column value of `model.name` as the ORM would."""
    col, converters = _converters(model)[model._meta.concrete_fields.index(model._meta.get_field(name))]
    for converter in converters:
        value = converter(value, col, connection)
    return value


@functools.cache
def _update_statement(model, names: tuple) -> tuple[str, list]:
    """The UPDATE of `names` by primary key, and each of those fields with `_passes(field)`."""
    quote = backend.quote_name
    fields = [model._meta.get_field(name) for name in names]
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    statement = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote(model._meta.pk.column)} = %s"
    return statement, [(field, _passes(field)) for field in fields]


def update(model, pk, changes: dict) -> None:
    """UPDATE one row by primary key with `changes` ({field name: value}), adapting values as the ORM does.

    Inside `deferred()` a row updated again joins its first UPDATE: each row is written once per batch.
    """
    if not changes:
        return
    if _pending.statements is not None:
        held = _pending.updates.get((model, pk))
        if held is not None:
            place, merged = held
            merged.update(changes)
            _pending.statements[place] = _update(model, pk, merged)
            return
        _pending.updates[(model, pk)] = [len(_pending.statements), dict(changes)]
    _execute(*_update(model, pk, changes))


def _update(model, pk, changes: dict) -> tuple[str, list]:
    statement, fields = _update_statement(model, tuple(changes))
    db = connections[DEFAULT_DB_ALIAS]
    params = [_prep(field, kind, value, db) for (field, kind), value in zip(fields, changes.values(), strict=True)]
    params.append(pk)
    return statement, params


def _insert_values(obj, fields, db) -> list:
    for field, _kind in fields:
        # As save() does: a foreign key set to an instance saved since takes that instance's key.
        if field.is_relation and getattr(obj, field.attname) is None:
            related = backend.cached_related(field, obj)
            if related is not None and related.pk is not None:
                setattr(obj, field.attname, related.pk)
    return [_prep(field, kind, field.pre_save(obj, True), db) for field, kind in fields]


def _db_value(field, value, db):
    """`field.get_db_prep_save(value, db)`, skipping the call where it would make nothing new of `value`."""
    return _prep(field, _passes(field), value, db)


def _prep(field, kind, value, db):
    """`_db_value` with `_passes(field)` already known: statements keep it with their fields."""
    if kind is not None and (
        value is None or (type(value) is kind and (kind is not dt.datetime or value.utcoffset() is not None))
    ):
        return value
    return field.get_db_prep_save(value, db)


# Fields whose get_db_prep_save makes nothing new of a value of this exact type (or None): such a value
# goes as it is, without the call. (On PostgreSQL Django wraps an int in the column's integer type, for
# parameters bound on the server; the column gives an INSERT's or UPDATE's value that type all the same.)
# Subclasses are left out; they may prepare values their own way.
_PLAIN_FIELDS = {
    int: (
        model_fields.IntegerField, model_fields.BigIntegerField, model_fields.SmallIntegerField,
        model_fields.PositiveIntegerField, model_fields.PositiveSmallIntegerField,
        model_fields.PositiveBigIntegerField, model_fields.AutoField, model_fields.BigAutoField,
    ),
    str: (model_fields.CharField, model_fields.TextField),
    bool: (model_fields.BooleanField,),
}


@functools.cache
def _passes(field) -> type | None:
    """The Python type of values that `field` may send to the database as they are, or None.

    A foreign key sends its target's key as it is. An aware datetime goes unchanged to PostgreSQL,
    which takes it with its offset; SQLite needs it turned to text.
    """
    if field.is_relation:
        return _passes(backend.target_field(field)) if field.many_to_one or field.one_to_one else None
    kind = type(field)
    for python_type, field_types in _PLAIN_FIELDS.items():
        if kind in field_types:
            return python_type
    if kind is model_fields.DateTimeField and postgres() and settings.USE_TZ:
        return dt.datetime
    return None


@functools.cache
def _insert_statement(model, returning: bool, with_key: bool = False) -> tuple[str, list]:
    """`INSERT INTO <table> (<every column but the key, or every one>) VALUES (...)`, and those fields
    with `_passes(field)` each.

    One row per statement: a fixed text whose parsed placeholders the driver keeps, where a statement
    of many rows would be parsed anew each time; several go to PostgreSQL in one round trip anyway.
    """
    quote = backend.quote_name
    fields = [f for f in model._meta.concrete_fields if with_key or not f.primary_key]
    statement = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    if returning:
        statement += f" RETURNING {quote(model._meta.pk.column)}"
    return statement, [(field, _passes(field)) for field in fields]


def _saved(obj) -> None:
    obj._state.adding = False
    obj._state.db = DEFAULT_DB_ALIAS


def insert(*objs) -> None:
    """INSERT new instances of one model and set their primary keys, as bulk_create would: one round trip."""
    if not objs:
        return
    model = type(objs[0])
    statement, fields = _insert_statement(model, returning=True)
    db = connections[DEFAULT_DB_ALIAS]
    answers = fetch_many([(statement, _insert_values(obj, fields, db)) for obj in objs])
    for obj, [(pk,)] in zip(objs, answers, strict=True):
        setattr(obj, model._meta.pk.attname, pk)
        _saved(obj)


def insert_later(*objs) -> None:
    """INSERT new instances of one model whose keys nobody needs back, or that have theirs from `next_ids`.

    Inside `deferred()` the INSERTs wait for the batch.
    """
    db = connections[DEFAULT_DB_ALIAS]
    for obj in objs:
        statement, fields = _insert_statement(type(obj), returning=False, with_key=obj.pk is not None)
        _execute(statement, _insert_values(obj, fields, db))
        _saved(obj)


@functools.cache
def _sequence(model) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [model._meta.db_table, model._meta.pk.column])
        return cursor.fetchone()[0]


def next_ids(model, count: int = 1) -> tuple[str, list] | None:
    """A SELECT of `count` new primary keys from `model`'s sequence, to send with other reads.

    A row given its key this way can be INSERTed with the write's other statements (`insert_later`)
    instead of on its own to learn its key. None where keys come only from the INSERT (SQLite).
    """
    if not postgres():
        return None
    name = _sequence(model).replace("'", "''")
    return f"SELECT nextval('{name}') FROM generate_series(1, %s)", [count]


def fetch_many(statements) -> list[list[tuple]]:
    """Run several SELECTs, (text, params) each, in order, and return each one's raw rows: one round trip on PostgreSQL."""
    if postgres() and len(statements) > 1:
        with _batched(statements) as cursor:
            results = [cursor.fetchall()]
            while cursor.nextset():
                results.append(cursor.fetchall())
        return results
    results = []
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)
            results.append(cursor.fetchall())
    return results


@functools.cache
def select_text(model, where: str, suffix: str = "") -> str:
    """`SELECT <the model's columns> FROM <its table> t WHERE <where> <suffix>`, rows for `build`."""
    return f"SELECT {columns(model, 't')} FROM {backend.quote_name(model._meta.db_table)} t WHERE {where} {suffix}"


def select_many(queries, *, raw=()) -> list[list]:
    """Run several `select` queries, (model, where, params, suffix) each, in order: one round trip on PostgreSQL.

    `raw` SELECTs, (text, params) each, go after them in the same round trip; their rows come last, as
    the driver returned them.
    """
    statements = [(select_text(model, where, suffix), params) for model, where, params, suffix in queries]
    found = fetch_many([*statements, *raw])
    db = connections[DEFAULT_DB_ALIAS]
    built = [
        [build(model, row, db) for row in rows]
        for (model, *_rest), rows in zip(queries, found[: len(queries)], strict=True)
    ]
    return built + found[len(queries):]


def select(model, where: str, params, *, suffix: str = "") -> list:
    """Instances of `model` from `SELECT <its columns> FROM <its table> t WHERE <where> <suffix>`."""
    return select_many([(model, where, params, suffix)])[0]


# --- what a write saves ---------------------------------------------------------------------------


@functools.cache
def written_fields(model) -> tuple[str, ...]:
    """Every column of `model` a write may change: each concrete field but the key, as the model says."""
    return tuple(field.attname for field in model._meta.concrete_fields if not field.primary_key)


@functools.cache
def _values(model):
    """A function reading the written fields of an instance of `model` as a tuple (operator.attrgetter, in C)."""
    names = written_fields(model)
    getter = operator.attrgetter(*names)
    return getter if len(names) > 1 else (lambda obj: (getter(obj),))


@functools.cache
def _json_positions(model) -> tuple[int, ...]:
    """Where in `written_fields(model)` the JSON fields are: the only values a write can change in place."""
    written = [field for field in model._meta.concrete_fields if not field.primary_key]
    return tuple(i for i, field in enumerate(written) if isinstance(field, JSONField))


def _copy(value):
    """A copy of a JSON value (dicts, lists and scalars), made without deepcopy's general machinery."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return value if kind in _SCALARS else copy.deepcopy(value)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _kept(model, values: tuple, by_identity: frozenset) -> tuple:
    """`values` as they are to be kept: JSON ones copied (but those compared by identity)."""
    positions = _json_positions(model)
    if not positions:
        return values
    kept = list(values)
    names = written_fields(model)
    for i in positions:
        value = kept[i]
        if (type(value) is dict or type(value) is list) and names[i] not in by_identity:
            kept[i] = _copy(value)
    return tuple(kept)


def remember(obj, *, by_identity: frozenset = frozenset()):
    """Keep an instance's values as loaded, so `changes` can tell what a write altered; return it.

    JSON values are copied, so a change made in place still shows. A field in `by_identity` is
    compared by identity instead (a large document a write only ever replaces, never alters).
    """
    model = type(obj)
    obj.loaded_values = _kept(model, _values(model)(obj), by_identity)
    obj.loaded_by_identity = by_identity
    return obj


def changes(obj) -> dict:
    """The fields of a remembered instance that differ from what was loaded, now remembered as saved.

    An instance never remembered has every field changed.
    """
    model = type(obj)
    names = written_fields(model)
    now = _values(model)(obj)
    loaded = getattr(obj, "loaded_values", None)
    if loaded is None:
        return dict(zip(names, now, strict=True))
    by_identity = obj.loaded_by_identity
    if not by_identity and now == loaded:
        return {}  # the common case, compared in C
    found = {
        name: value
        for name, value, before in zip(names, now, loaded, strict=True)
        if value is not before and (name in by_identity or value != before)
    }
    if found:
        obj.loaded_values = _kept(model, now, by_identity)
    return found
