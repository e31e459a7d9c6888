"""Plain SQL for the hottest paths: model rows read and written without building an ORM query each time.

The ORM compiles every queryset anew; on a path that runs on every request that compilation costs
more than the database does. These helpers keep what Django would do (column names, the backend's
value converters and parameter adaptation) and do it with a fixed statement.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import threading
from contextlib import contextmanager

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models import fields as model_fields
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from psycopg import adapt, pq
from psycopg._preparing import PrepareManager
from psycopg._queries import PostgresClientQuery


class _Pending(threading.local):
    statements: list | None = None


_pending = _Pending()


@contextmanager
def deferred(*, commit: bool = False):
    """Hold the UPDATEs and result-less INSERTs made inside and send them together at the end.

    On PostgreSQL they go as one multi-statement query: one round trip instead of one each. Use it
    only inside a transaction, around code that does not read back the rows it writes through here.
    `commit=True`, for the block that ends the outermost transaction, adds its COMMIT to that query
    (PostgreSQL); the atomic block's own commit then finds the transaction over and sends nothing.
    If any statement fails, the COMMIT never runs and the atomic block rolls back as usual.
    """
    if _pending.statements is not None:
        yield
        return
    _pending.statements = []
    try:
        yield
        statements, _pending.statements = _pending.statements, None
        if commit and statements and postgres():
            statements.append(("COMMIT", []))
        _send(statements)
    finally:
        _pending.statements = None


@contextmanager
def _batch(statements):
    """A cursor that has run several statements, (text, params) each, in one round trip; for `nextset`.

    Several statements in one query take PostgreSQL's simple query protocol, so their parameters are
    bound on the client for it, as psycopg's mogrify does (psycopg then reuses each one's parsed
    placeholders), and the joined text goes without parameters. A statement sent often enough on a
    connection is prepared there once and then goes as `EXECUTE name(values)`, so the database does
    not parse and plan it again each time (`_Prepared`). The connection's other statements bind
    theirs on the server and psycopg prepares them itself. A batch that is a transaction's first
    query carries that transaction's BEGIN at its head, instead of psycopg sending it on its own.
    """
    db = connections[DEFAULT_DB_ALIAS]  # once, not through the proxy at each use
    db.ensure_connection()
    with db.wrap_database_errors:
        raw_connection = db.connection
        prepared = _Prepared.of(raw_connection)
        raw = psycopg.ClientCursor(raw_connection)
        if _utc(db, raw_connection):
            raw.adapters.register_loader(_TIMESTAMPTZ, _C_TIMESTAMPTZ_LOADER)
        # One transformer for the whole batch, as mogrify would make for each statement: each type's
        # dumper is looked up once.
        transformer = adapt.Transformer(raw)
        literal = transformer.as_literal
        parts = []
        for statement, params in statements:
            name = prepared.name(raw, statement) if prepared is not None else None
            if name is None:
                query = PostgresClientQuery(transformer)
                query.convert(statement, params)
                parts.append(query.query)
            else:
                parts.append(_execute_bytes(name, [b"NULL" if p is None else literal(p) for p in params]))
        opens = _opens_transaction(raw_connection)
        if opens:
            parts.insert(0, raw_connection._get_tx_start_command())
        text = b";\n".join(parts).decode(transformer.encoding)
    cursor = db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)
    try:
        try:
            if opens:
                # The batch carries the transaction's BEGIN: psycopg, which would send its own in a
                # round trip before the batch, is kept from doing so for this one query.
                raw_connection._autocommit = True
                try:
                    cursor.execute(text)
                finally:
                    raw_connection._autocommit = False
                cursor.nextset()  # past BEGIN's result, to the first statement's
            else:
                cursor.execute(text)
        except Exception as error:
            if prepared is not None and getattr(error.__cause__, "sqlstate", None) == _NO_SUCH_STATEMENT:
                prepared.forget()  # something else emptied the connection's statements: start again
            raise
        yield cursor
    finally:
        cursor.close()


# psycopg's own timestamptz loader, in C where psycopg has its C module: what a batch's rows are read with.
_TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid
_C_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ, pq.Format.TEXT)


def _utc(db, raw_connection) -> bool:
    """Whether psycopg's timestamptz loader reads values as Django's would on this connection.

    Django reads timestamptz with a loader of its own, in Python, that gives each datetime Django's
    time zone. Where that zone and the session's are both UTC, psycopg's loader gives the same
    datetimes, about twenty times faster. It is set on each batch's cursor, not on the connection:
    Django asks the connection's loader for its zone at every cursor it opens, and psycopg's has none.
    """
    return settings.USE_TZ and db.timezone is dt.UTC and raw_connection.info.timezone is dt.UTC


def _opens_transaction(raw_connection) -> bool:
    """Whether the next query on this psycopg connection starts a transaction (psycopg would send BEGIN)."""
    return (
        not raw_connection.autocommit
        and raw_connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
        and raw_connection._pipeline is None
    )


_NO_SUCH_STATEMENT = "26000"  # invalid_sql_statement_name


@functools.cache
def _numbered(statement: str) -> str:
    """`statement` with its `%s` placeholders numbered for PREPARE (`$1`, `$2`, ...) and `%%` made `%`."""
    count = 0

    def number(match):
        nonlocal count
        if match.group() == "%%":
            return "%"
        count += 1
        return f"${count}"

    return re.sub(r"%%|%s", number, statement)


def _execute_bytes(name: str, literals: list[bytes]) -> bytes:
    """`EXECUTE name(...)` with the parameters' literals, as psycopg's mogrify would write it."""
    return b"EXECUTE %b(%b)" % (name.encode(), b", ".join(literals)) if literals else b"EXECUTE " + name.encode()


class _Prepared:
    """The batch statements prepared on one psycopg connection, by their text.

    A statement is prepared by itself, in its own round trip, after it has been sent `threshold`
    times (the connection's `prepare_threshold`; none when that is off, as behind a transaction-mode
    pooler). Inside a transaction it is prepared within a savepoint, so a statement PostgreSQL
    cannot prepare (a parameter whose type it cannot tell) costs the transaction nothing and goes
    as plain text from then on. A prepared statement outlives a rollback, so knowing that its
    PREPARE succeeded is knowing it exists, until psycopg empties the connection's statements
    (`DEALLOCATE ALL`, after a rollback or a DROP while it holds prepared statements of its own):
    the connection's prepare manager is given `_ClearingManager` behaviour, which forgets these too.
    """

    limit = 200  # statements per connection, as a bound on the server's memory

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.names: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.generation = 0

    @classmethod
    def of(cls, raw_connection) -> _Prepared | None:
        manager = raw_connection._prepared
        if manager.prepare_threshold is None:
            return None
        if type(manager) is not _ClearingManager:
            manager.__class__ = _ClearingManager
            manager.batch = cls(max(manager.prepare_threshold, 1))
        return manager.batch

    def forget(self) -> None:
        self.names.clear()
        self.counts.clear()
        self.generation += 1  # names never come back: one left over on the server cannot collide

    def name(self, raw, statement: str) -> str | None:
        """The prepared name of `statement` on this connection, preparing it now if it is due; or None."""
        name = self.names.get(statement)
        if name is not None or statement in _unpreparable:
            return name
        if statement.lstrip()[:6].upper() not in _PREPARABLE:
            return None  # COMMIT, say
        count = self.counts.get(statement, 0) + 1
        if count < self.threshold or len(self.names) >= self.limit:
            if len(self.counts) >= self.limit * 5:
                self.counts.clear()  # texts that vary from call to call: counting them would only grow
            self.counts[statement] = count
            return None
        self.counts.pop(statement, None)
        return self._prepare(raw, statement)

    def _prepare(self, raw, statement: str) -> str | None:
        status = raw.connection.info.transaction_status
        if status not in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
            return None  # a failed transaction: the batch will fail on its own
        name = f"ap_{self.generation}_{len(self.names) + 1}"
        text = f"PREPARE {name} AS {_numbered(statement)}"
        # Outside autocommit psycopg opens a transaction at the first statement, so IDLE is within one too.
        within = status == pq.TransactionStatus.INTRANS or not raw.connection.autocommit
        if within:
            # On its own: a statement that fails to parse stops the whole query it is in, savepoint and all.
            raw.execute("SAVEPOINT ap_prepare", prepare=False)
            text += "; RELEASE SAVEPOINT ap_prepare"
        try:
            raw.execute(text, prepare=False)
        except Exception:
            _unpreparable.add(statement)
            if within:
                raw.execute("ROLLBACK TO SAVEPOINT ap_prepare; RELEASE SAVEPOINT ap_prepare", prepare=False)
            return None
        self.names[statement] = name
        return name


_unpreparable: set[str] = set()
_PREPARABLE = {"SELECT", "INSERT", "UPDATE", "DELETE", "VALUES"}  # what PREPARE takes (a WITH is not tried)


class _ClearingManager(PrepareManager):
    """psycopg's prepare manager, which also forgets the batch statements when it empties the connection's."""

    batch: _Prepared

    def clear(self) -> bool:
        emptied = super().clear()
        if emptied:  # psycopg is about to send DEALLOCATE ALL
            self.batch.forget()
        return emptied


def _send(statements: list) -> None:
    if not statements:
        return
    if postgres() and len(statements) > 1:
        with _batch(statements):
            pass  # nothing to read back
        return
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)


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
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


@functools.cache
def _converters(model) -> list:
    plan = []
    for field in model._meta.concrete_fields:
        col = field.get_col(model._meta.db_table)
        plan.append((col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)))
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
    attnames = _plain_attnames(model)
    if attnames is None:
        return model.from_db(DEFAULT_DB_ALIAS, None, convert(model, values, db))
    # What Model.__init__ does for a full row of a model nothing listens to: the field values and
    # the state of a row that is already in the database, without the per-field bookkeeping.
    obj = model.__new__(model)
    obj.__dict__.update(zip(attnames, convert(model, values, db), strict=True))
    state = obj._state = ModelState()
    state.adding = False
    state.db = DEFAULT_DB_ALIAS
    return obj


@functools.cache
def _plain_attnames(model) -> tuple | None:
    """The models whose rows `build` may fill directly: no init signal receivers, no custom from_db.

    Asked once per model, at its first row: receivers connect when the apps load, before any query.
    """
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return None
    if model.from_db.__func__ is not Model.from_db.__func__:
        return None
    return tuple(field.attname for field in model._meta.concrete_fields)


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
    quote = connection.ops.quote_name
    fields = [model._meta.get_field(name) for name in names]
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    statement = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote(model._meta.pk.column)} = %s"
    return statement, [(field, _passes(field)) for field in fields]


def update(model, pk, changes: dict) -> None:
    """UPDATE one row by primary key with `changes` ({field name: value}), adapting values as the ORM does."""
    if not changes:
        return
    statement, fields = _update_statement(model, tuple(changes))
    db = connections[DEFAULT_DB_ALIAS]
    params = [_prep(field, kind, value, db) for (field, kind), value in zip(fields, changes.values(), strict=True)]
    params.append(pk)
    _execute(statement, params)


def _insert_values(obj, fields, db) -> list:
    for field, _kind in fields:
        # As save() does: a foreign key set to an instance saved since takes that instance's key.
        if field.is_relation and getattr(obj, field.attname) is None and field.is_cached(obj):
            related = field.get_cached_value(obj)
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
        return _passes(field.target_field) if field.many_to_one or field.one_to_one else None
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
    quote = connection.ops.quote_name
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
    results = []
    if postgres() and len(statements) > 1:
        with _batch(statements) as cursor:
            for index in range(len(statements)):
                if index:
                    cursor.nextset()
                results.append(cursor.fetchall())
        return results
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)
            results.append(cursor.fetchall())
    return results


@functools.cache
def select_text(model, where: str, suffix: str = "") -> str:
    """`SELECT <the model's columns> FROM <its table> t WHERE <where> <suffix>`, rows for `build`."""
    return f"SELECT {columns(model, 't')} FROM {connection.ops.quote_name(model._meta.db_table)} t WHERE {where} {suffix}"


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
