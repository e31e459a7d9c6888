"""Plain SQL for the hottest paths: model rows read and written without building an ORM query each time.

The ORM compiles every queryset anew; on a path that runs on every request that compilation costs
more than the database does. These helpers keep what Django would do (column names, the backend's
value converters and parameter adaptation) with a fixed statement text, built once per process.

Everything here stands on public APIs. How statements reach the database, several in one round trip,
is `base.sending`'s; Django's `transaction.atomic` owns every BEGIN and COMMIT: nothing here begins or
ends a transaction.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from base import adapting, backend, joining, json_rows, sending
from base.sending import postgres


class _Pending(threading.local):
    statements: list | None = None
    updates: dict | None = None  # (model, key): [its place in `statements`, the changes so far]
    optimistic: bool = False  # inside `optimistic()`: no transaction, the batch applied only past its guard
    new_rows: bool = False  # inside `optimistic(new_rows=True)`: a batch of INSERTs only, applied without a guard
    guard: tuple | None = None  # (text, params) of the guarding UPDATE ... RETURNING, once `guard()` set it
    after: list | None = None  # what `on_commit` holds until the guarded batch is applied
    expected: list | None = None  # the rows the write's reads stood on, (model, key, {field: value as read})
    sending: bool = False
    db = None  # inside `deferred()`: the connection wrapper, looked up once for the write (`_db`)


_pending = _Pending()


class deferred:  # a context, entered as `with sql.deferred():`
    """Hold the UPDATEs and result-less INSERTs made inside and send them together at the end.

    On PostgreSQL they go as one query: one round trip instead of one each. Use it only inside a
    transaction, around code that does not read back the rows it writes through here; an error in any
    of them is raised at the end, and the transaction rolls back as usual. Inside another, it is the
    other's. (A class, not a generator: every write enters it.)
    """

    __slots__ = ("inner",)

    def __enter__(self):
        self.inner = _pending.statements is not None
        if not self.inner:
            _pending.statements, _pending.updates, _pending.guard = [], {}, None
            _pending.db = connections[DEFAULT_DB_ALIAS]

    def __exit__(self, kind, _exc, _traceback):
        if self.inner:
            return
        try:
            if kind is None:
                statements, _pending.statements = _pending.statements, None
                guard, _pending.guard = _pending.guard, None
                if _pending.optimistic:
                    _send_guarded(guard, statements)
                else:
                    sending.send(statements)
        finally:
            _pending.statements = _pending.updates = _pending.guard = _pending.db = None


def _db():
    """The default connection's wrapper: the write's own inside `deferred()`, else looked up (through
    asgiref's context-local storage, which costs more than the rest of a small statement's making)."""
    db = _pending.db
    return db if db is not None else connections[DEFAULT_DB_ALIAS]


# --- writes without a transaction block ----------------------------------------------------------


class Moved(Exception):
    """The row guarding an optimistic write changed after it was read: nothing was written; read again."""


class NeedsLock(Exception):
    """An optimistic write asked for something only a transaction gives (a write sent at once, a key
    returned by an INSERT, a lock): nothing was written; do it again in a transaction."""


@contextmanager
def optimistic(*, new_rows: bool = False):
    """Reads and decisions in autocommit, the write applied by one statement past a guard.

    Inside, wrap the write in `deferred()` and make one `guard()` before its end: the batch then goes as
    one statement whose every part runs only if the guard's UPDATE found its row as it was read, which
    that UPDATE changes, so a concurrent twin that read the same row fails its own guard. A guard that
    finds nothing raises `Moved`, and nothing of the batch is written. Any statement that would write at
    once, and any lock, raises `NeedsLock` before it is sent; `on_commit` callbacks run only once the
    batch is applied. PostgreSQL only: each statement is atomic on its own, and its data-modifying
    `WITH` queries see the guard's RETURNING. Inside a caller's transaction it all goes in a savepoint,
    so whatever fails leaves that transaction usable, and the callbacks wait for its commit.

    The reads are not one snapshot: each SELECT sees what was committed when it began. A write applied
    past its guard stood on a consistent view (the guard fails if anything it read moved since), but
    an answer given without a guard (nothing to write, or an error) could stand on two moments. So a
    write that ends without a guard checks the rows `expect` named: if one moved, it raises `Moved`
    in place of its answer, and is read and decided again.

    `new_rows`: the write only INSERTs rows that nothing else can know of before it is applied (a new
    run and its rows), so it needs no guard: its one statement applies all of it or nothing. Any other
    statement in its batch raises `NeedsLock`.
    """
    if _pending.optimistic or _pending.statements is not None:
        raise NeedsLock("an optimistic write cannot nest in another write")
    db = connections[DEFAULT_DB_ALIAS]
    outer = db.in_atomic_block
    _pending.optimistic, _pending.after, _pending.expected = True, [], []
    _pending.new_rows = new_rows
    try:
        # In a caller's transaction, a savepoint: whatever fails inside leaves that transaction usable.
        try:
            with transaction.atomic() if outer else contextlib.nullcontext(), db.execute_wrapper(_refuse_writes):
                yield
        except (Moved, NeedsLock, DatabaseError):
            raise
        except Exception:
            _check_expected()  # an error answer only from a view that held still
            raise
        after = _pending.after
    finally:
        _pending.optimistic, _pending.after, _pending.expected = False, None, None
        _pending.new_rows = False
    for callback in after:
        # Inside a caller's transaction the batch is applied only when that commits.
        transaction.on_commit(callback) if outer else callback()


def expect(model, pk, expected: dict) -> None:
    """Name a row the current write's reads stood on, as read ({field name: value}); outside
    `optimistic()` nothing (the row's lock holds it still). See `optimistic`."""
    if _pending.optimistic:
        _pending.expected.append((model, pk, expected))


def _check_expected() -> None:
    if not _pending.expected:
        return
    quote = backend.quote_name
    checks, params = [], []
    for model, pk, expected in _pending.expected:
        conditions, values = _as_read(model, pk, expected)
        checks.append(f"(SELECT count(*) FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.pk.column)} = %s{conditions})")
        params += values
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {' + '.join(checks)}", params)
        (held,) = cursor.fetchone()
    if held != len(_pending.expected):
        raise Moved("a row the write read changed before its answer")


def on_commit(callback) -> None:
    """Run `callback` once the current write is applied: transaction.on_commit, or after an optimistic batch."""
    if _pending.optimistic:
        _pending.after.append(callback)
    else:
        transaction.on_commit(callback)


def guard(model, pk, changes: dict, expected: dict) -> None:
    """The UPDATE of one row by key that the batch depends on, applied only where `expected` still holds
    ({field name: value as read}). Outside `optimistic()` a plain `update`: the row's lock guards it."""
    if not _pending.optimistic:
        update(model, pk, changes)
        return
    if _pending.guard is not None:
        raise NeedsLock("an optimistic write has one guard")
    statement, fields = _update_statement(model, tuple(changes))
    db = _db()
    params = adapting.prepped(fields, changes.values(), db)
    conditions, values = _as_read(model, pk, expected, db)  # the statement ends in `WHERE <key> = %s`
    _pending.guard = (f"{statement}{conditions} RETURNING 1", params + values)


def guard_found(text: str, params: list) -> None:
    """The SELECT a batch of new rows depends on, inside `optimistic()`: every part is applied only where
    it finds a row, and where it finds none `Moved` is raised and nothing is written."""
    if not _pending.optimistic:
        raise NeedsLock("a guard of rows found stands only on an optimistic write")
    if _pending.guard is not None:
        raise NeedsLock("an optimistic write has one guard")
    if not joining.only_reads(text):
        raise NeedsLock(f"a guard of rows found only reads: {text[:60]!r}")
    _pending.guard = (text, list(params))


def _as_read(model, pk, expected: dict, db=None) -> tuple[str, list]:
    """` AND <column> = %s` for each field of `expected` ({field name: value as read}), to follow a
    `<key> = %s`, and the parameters of both: the key first."""
    conditions, fields = _conditions(model, tuple(expected))
    return conditions, [pk, *adapting.prepped(fields, expected.values(), db or _db())]


@functools.cache
def _conditions(model, names: tuple) -> tuple[str, tuple]:
    """` AND <column> = %s` for each of `names`, and those fields as `adapting.with_kinds` gives them."""
    fields = [model._meta.get_field(name) for name in names]
    conditions = "".join(f" AND {backend.quote_name(field.column)} = %s" for field in fields)
    return conditions, adapting.with_kinds(fields)


def _refuse_unless_read(text: str) -> None:
    if not joining.only_reads(text):
        raise NeedsLock(f"an optimistic write sends reads only until its batch: {text[:60]!r}")


def _refuse_writes(execute, text, params, many, context):
    if not _pending.sending:
        _refuse_unless_read(text)
    return execute(text, params, many, context)


def _send_guarded(guard_statement, batch: list) -> None:
    if not batch and guard_statement is None:
        _check_expected()  # nothing to write: the answer stands on the reads alone
        return
    if guard_statement is None and not _pending.new_rows:
        raise NeedsLock("an optimistic write changed rows without a guard")
    # A write of new rows stands on no row read (a guard of rows found compares none): it only adds rows.
    if _pending.new_rows and any(not text.startswith("INSERT ") or " RETURNING " in text for text, _params in batch):
        raise NeedsLock("a write of new rows only changed a row that was there before")
    guard_text, guard_params = guard_statement or (None, [])
    if len(guard_params) + joining.value_count(batch) > sending.ONE_STATEMENT_PARAMS:
        raise NeedsLock("a write too large for one statement")
    if guard_text is None:
        _sent(*joining.one_statement(batch))
        return
    try:
        text, params = joining.guarded_statement(guard_text, guard_params, batch)
    except joining.NotGuardable as refused:
        raise NeedsLock(str(refused)) from None
    (applied,) = _sent(text, params, first_row=True)
    if not applied:
        raise Moved("the guarding row changed since it was read")


def _sent(text: str, params: list, *, first_row: bool = False):
    """Send an optimistic write's one statement, past the refusal of writes sent at once (`send_one`)."""
    _pending.sending = True
    try:
        return sending.send_one(text, params, db=_db(), first_row=first_row)
    finally:
        _pending.sending = False


def is_optimistic() -> bool:
    """Whether the current write runs inside `optimistic()`: its reads take no lock."""
    return _pending.optimistic


def execute(text: str, params: list, *, guardable: bool = False) -> None:
    """Run one statement that returns no rows; inside `deferred()` it joins the write's batch.

    `guardable`: an UPDATE whose WHERE still means what it says with ` AND <condition>` appended (no
    top-level OR), so it can join an optimistic write's batch (`optimistic`).
    """
    if guardable:
        if not text.startswith("UPDATE ") or " RETURNING " in text:
            raise ValueError("only an UPDATE that returns nothing can be guarded")
        joining.GUARDABLE_UPDATES.add(text)
    _execute(text, params)


def _execute(text: str, params: list) -> None:
    if _pending.statements is not None:
        _pending.statements.append((text, params))
    else:
        sending.send([(text, params)])


# One process talks to one database, so what is built from its backend is built once.


@functools.cache
def columns(model, alias: str) -> str:
    """The model's concrete columns, qualified by `alias`, in field order (what `build` expects)."""
    quote = backend.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


@functools.cache
def _converters(model) -> list:
    """Each concrete field's column and converters, in field order."""
    plan = []
    for field in model._meta.concrete_fields:
        plan.append(backend.column_converters(field, model._meta.db_table, connection))
    return plan


@functools.cache
def _converted(model) -> tuple:
    """The columns that have converters, (position, column, converters) each: most have none."""
    return tuple((i, col, converters) for i, (col, converters) in enumerate(_converters(model)) if converters)


def convert(model, values, db=None) -> list:
    """Turn raw column values (as the driver returned them) into Python values, as the ORM would."""
    if len(values) != len(_converters(model)):
        raise ValueError(f"{model.__name__} has {len(_converters(model))} columns, the row {len(values)}")
    db = db or connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each converter reads it without the proxy
    out = list(values)
    for i, col, converters in _converted(model):
        value = out[i]
        for converter in converters:
            value = converter(value, col, db)
        out[i] = value
    return out


def build(model, values, db=None):
    """A model instance from a row of `columns(model, ...)`, or None when the row's primary key is NULL.

    `db`, the connection wrapper, spares each row looking it up when many are built.
    """
    # A NULL key (the empty side of a LEFT JOIN) stays NULL through every converter: skip the work.
    if values[_pk_index(model)] is None:
        return None
    return backend.loaded(model, DEFAULT_DB_ALIAS, convert(model, values, db))


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
    """The UPDATE of `names` by primary key, and those fields as `adapting.with_kinds` gives them."""
    quote = backend.quote_name
    fields = [model._meta.get_field(name) for name in names]
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    statement = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote(model._meta.pk.column)} = %s"
    joining.GUARDABLE_UPDATES.add(statement)
    return statement, adapting.with_kinds(fields)


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
    params = adapting.prepped(fields, changes.values(), _db())
    params.append(pk)
    return statement, params


@functools.cache
def _insert_statement(model, returning: bool, with_key: bool = False) -> tuple[str, list, tuple]:
    """`INSERT INTO <table> (<every column but the key, or every one>) VALUES (...)`, those fields
    as `adapting.with_kinds` gives them, and how an instance's values for them are read (`adapting.insert_plan`).

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
    else:
        joining.CAST_ROWS[statement] = f"({', '.join(f'CAST(%s AS {f.db_type(connection)})' for f in fields)})"
    return statement, adapting.with_kinds(fields), adapting.insert_plan(model, tuple(fields))


def _saved(obj) -> None:
    obj._state.adding = False
    obj._state.db = DEFAULT_DB_ALIAS


def insert(*objs) -> None:
    """INSERT new instances of one model and set their primary keys, as bulk_create would: one round trip."""
    if not objs:
        return
    model = type(objs[0])
    statement, fields, plan = _insert_statement(model, True)
    db = _db()
    answers = fetch_many([(statement, adapting.insert_values(obj, fields, plan, db)) for obj in objs])
    for obj, [(pk,)] in zip(objs, answers, strict=True):
        setattr(obj, model._meta.pk.attname, pk)
        _saved(obj)


def insert_later(*objs) -> None:
    """INSERT new instances of one model whose keys nobody needs back, or that have theirs from `base.keys`.

    Inside `deferred()` the INSERTs wait for the batch.
    """
    db = _db()
    for obj in objs:
        model = type(obj)
        statement, fields, plan = _insert_statement(model, False, obj.__dict__.get(model._meta.pk.attname) is not None)
        _execute(statement, adapting.insert_values(obj, fields, plan, db))
        _saved(obj)


def batching() -> bool:
    """Whether statements sent through here now wait for a write's batch (`deferred`)."""
    return _pending.statements is not None


def fetch_many(statements) -> list[list[tuple]]:
    """Run several SELECTs, (text, params) each, in order, and return each one's raw rows: one round trip on PostgreSQL."""
    if postgres() and len(statements) > 1:
        if _pending.optimistic and not _pending.sending:
            for text, _params in statements:
                _refuse_unless_read(text)
        with sending.batched(statements) as cursor:
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


def fetch(text: str, params) -> list[tuple]:
    """Run one SELECT and return its raw rows: on PostgreSQL bound on the server, and so prepared once its
    text repeats, where several SELECTs in one round trip (`fetch_many`) are planned every time they come."""
    if not postgres():
        return fetch_many([(text, params)])[0]
    return sending.rows(text, params)


@functools.cache
def select_text(model, where: str, suffix: str = "") -> str:
    """`SELECT <the model's columns> FROM <its table> t WHERE <where> <suffix>`, rows for `build`."""
    return f"SELECT {columns(model, 't')} FROM {backend.quote_name(model._meta.db_table)} t WHERE {where} {suffix}"


def select_many(queries, *, raw=()) -> list[list]:
    """Run several `select` queries, (model, where, params, suffix) each, in order: one round trip on PostgreSQL,
    one prepared statement where their rows can come back as JSON (`base.json_rows`).

    `raw` SELECTs, (text, params) each, go after them in the same round trip; their rows come last, as
    the driver returned them.
    """
    if len(queries) + len(raw) > 1 and postgres() and json_rows.serves(queries, raw) and sending.utc_session():
        return _select_as_json(queries, raw)
    statements = [(select_text(model, where, suffix), params) for model, where, params, suffix in queries]
    found = fetch_many([*statements, *raw])
    db = connections[DEFAULT_DB_ALIAS]
    built = [
        [build(model, row, db) for row in rows]
        for (model, *_rest), rows in zip(queries, found[: len(queries)], strict=True)
    ]
    return built + found[len(queries):]


def _select_as_json(queries, raw) -> list[list]:
    """`select_many` as one prepared statement whose rows come back as JSON (`base.json_rows`)."""
    text = json_rows.statement(
        tuple(json_rows.select_text(model, where, suffix) for model, where, _params, suffix in queries),
        tuple(text for text, _params in raw),
    )
    params = [value for _model, _where, values, _suffix in queries for value in values]
    found = sending.one_row(text, params + [value for _text, values in raw for value in values])
    # Each query reads one table by itself (`select_text`): no row has a NULL key, as a LEFT JOIN's may.
    built = [
        backend.loaded_rows(model, DEFAULT_DB_ALIAS, json_rows.values(model, rows))
        for (model, *_rest), rows in zip(queries, found, strict=False)
    ]
    return built + [json_rows.raw_rows(rows) for rows in found[len(queries):]]


def select(model, where: str, params, *, suffix: str = "") -> list:
    """Instances of `model` from `SELECT <its columns> FROM <its table> t WHERE <where> <suffix>`."""
    return select_many([(model, where, params, suffix)])[0]
