"""How statements reach the database: several SELECTs in one round trip, a write's statements as one.

On PostgreSQL several SELECTs go as one statement whose rows come back as JSON (`base.json_rows`, read
by `one_row`) where JSON spells their values exactly, and otherwise as one simple query (`batched`),
each statement's values bound on the client by psycopg's ClientCursor.mogrify, their results one after
another. A write's UPDATEs and
INSERTs go as one statement of data-modifying `WITH` queries (`base.joining`), atomic on its own, bound
on the server and prepared by psycopg once its text has run `prepare_threshold` times on a connection
(settings.DATABASES OPTIONS). It is sent with PostgreSQL's own numbered placeholders (`Numbered`), so
psycopg parses no statement text on the client, however long. Both kinds of cursor are wrapped as
Django wraps its own: its execute wrappers, its query log and its errors apply.

psycopg's pipeline mode would send several SELECTs bound on the server, preparable, in one round trip
too; measured here (bench/inproc.py) it costs about twice the client's CPU of one simple query for the
two to four statements a write reads together, more than the server's planning it saves.
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
from psycopg import pq

from base import backend, joining


@functools.cache
def postgres() -> bool:
    return connection.vendor == "postgresql"


@contextmanager
def batched(statements):
    """A cursor that has run several statements, (text, params) each, in one round trip; for `nextset`.

    Several statements in one query take PostgreSQL's simple query protocol, so each one's parameters
    are bound on the client, as psycopg's ClientCursor.mogrify writes them, and the joined text goes
    with no parameters of its own. Its results come one after another (`nextset`).
    """
    db = connections[DEFAULT_DB_ALIAS]  # once, not through the proxy at each use
    db.ensure_connection()
    utc = _utc(db)
    raw = _kept(db, kind=utc)
    with backend.database_errors(db):
        text = ";\n".join(text for text, _params in statements)
        values = [value for _text, params in statements for value in params]
        if len(text) <= CLIENT_KEPT_TEXT and len(values) <= CLIENT_KEPT_PARAMS:
            text = raw.mogrify(text, values)  # the joined text's placeholders parsed once and kept
        else:
            text = ";\n".join(raw.mogrify(statement, params) for statement, params in statements)
    # A cursor holds on to the last text it sent: a large one (a write's rows) goes on a cursor of its
    # own, closed after; the kept one is left open for the connection's next batch (`_kept`).
    kept = len(text) <= KEPT_QUERY_TEXT
    cursor = backend.wrapped_cursor(db, raw if kept else _client_cursor(db, utc=utc))
    try:
        cursor.execute(text)
        yield cursor
    finally:
        if not kept:
            cursor.close()


def one_row(text: str, params: list) -> tuple:
    """The one row of a SELECT bound on the server (`Numbered`), and so prepared once its text repeats,
    read on the connection's kept cursor for it."""
    return _on_kept(text, params).fetchone()


def rows(text: str, params: list) -> list[tuple]:
    """Every row of a SELECT, sent as `one_row` sends it."""
    return _on_kept(text, params).fetchall()


def _on_kept(text: str, params: list):
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    cursor = backend.wrapped_cursor(db, _kept(db, kind=None))
    cursor.execute(text, params)
    return cursor


def utc_session() -> bool:
    """Whether this connection's session and Django both keep time in UTC (`_utc`), connecting first."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    return _utc(db)


# The longest batch, values bound, that goes on the connection's kept cursor (`_kept`).
KEPT_QUERY_TEXT = 64 * 1024


class _Kept(threading.local):
    """This thread's connection's driver cursors, kept from one use to the next: a cursor keeps the
    adapters it has looked up for the values it sent and the columns it read, which a new one looks up
    again. A Django connection is used by one thread; a new connection gets new cursors. A kept cursor
    also holds the rows of the thread's last batch until its next one: at most what one read of a
    tool returns (a run with its steps, whose data RUN_DATA_BYTES bounds); the one for writes holds the
    values of the thread's last write (`send_one`)."""

    connection = None
    cursors: dict | None = None


_held = _Kept()


def _kept(db, *, kind: bool | str | None):
    """One of the connection's kept cursors, made at its first use, and again for a new connection or
    once closed: with `kind` True or False its ClientCursor for batches, reading timestamptz with
    psycopg's loader or not (`_utc`); with None its `Numbered` cursor for reads (`one_row`, `rows`);
    with WRITES its `Numbered` cursor for writes (`send_one`). Reads and writes each keep a
    cursor of their own, so that neither looks up again the adapters of the other's values and columns."""
    if _held.connection is not db.connection:
        _held.connection, _held.cursors = db.connection, {}
    raw = _held.cursors.get(kind)
    if raw is None or raw.closed:
        raw = _held.cursors[kind] = _client_cursor(db, utc=kind) if type(kind) is bool else Numbered(db.connection)
    return raw


WRITES = "writes"  # `_kept`'s key for the cursor of a write's one statement


def _client_cursor(db, *, utc: bool):
    raw = psycopg.ClientCursor(db.connection)
    if utc:
        raw.adapters.register_loader(_TIMESTAMPTZ, _C_TIMESTAMPTZ_LOADER)
    return raw


# psycopg parses a statement's placeholders once and keeps them while its text is at most 4096
# characters and its values at most 50 (psycopg 3.1.11 release notes): a batch within both is bound as
# one text, a larger one statement by statement, each kept by itself.
CLIENT_KEPT_TEXT = 4096
CLIENT_KEPT_PARAMS = 50


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


# The most values one statement can bind: the protocol counts them in 16 bits. A batch with more, as
# an import's may have, goes as one simple query of its statements (`batched`).
ONE_STATEMENT_PARAMS = 65535


class Numbered(psycopg.RawCursor):
    """A cursor bound on the server that takes the `%s` statements the rest of the code writes, sending
    them with PostgreSQL's `$1, $2, ...`: psycopg neither parses the text nor limits how long it may be
    to be kept and prepared (it parses and keeps `%s` statements of at most 4096 characters and 50
    values only). Django wraps it as its own cursors (`backend.wrapped_cursor`): its execute wrappers
    and its query log see the `%s` text."""

    def execute(self, query, params=None, **kwargs):
        return super().execute(numbered(query), params, **kwargs)

    def executemany(self, query, params_seq, **kwargs):
        return super().executemany(numbered(query), params_seq, **kwargs)


# The longest statement text whose numbered form is kept (`numbered`): a write's shape repeats, but a
# text of many rows (a notice to each of a large group) is kept by nobody.
KEPT_NUMBERED_TEXT = 8192


def numbered(text: str) -> str:
    """`text` with each `%s` as `$1`, `$2`, ... in order and each `%%` as `%`."""
    return _numbered_kept(text) if len(text) <= KEPT_NUMBERED_TEXT else _numbered(text)


@functools.lru_cache(maxsize=1024)
def _numbered_kept(text: str) -> str:
    return _numbered(text)


def _numbered(text: str) -> str:
    parts = iter(range(1, text.count("%s") + 1))
    return _PLACEHOLDER.sub(lambda found: f"${next(parts)}" if found.group() == "%s" else "%", text)


_PLACEHOLDER = re.compile(r"%[s%]")


def send_one(text: str, params: list, *, db=None, first_row: bool = False):
    """Run one statement of `params` sent with numbered placeholders (`Numbered`) on a driver cursor
    wrapped as Django wraps its own; return its first row when `first_row`.

    It goes on the connection's kept cursor for writes (`_kept`), which keeps the adapters it has looked
    up for the values it sent; that cursor holds on to the values of its last statement until its next
    one, as the one for reads holds the rows of its last read: a write's are at most about its run's
    data (RUN_DATA_BYTES) twice over, the data and the write's record. A statement that sends bytes (an
    uploaded file, up to MAX_UPLOAD_BYTES) goes on a new cursor, closed after. `db`: the default
    connection's wrapper, when the caller has it."""
    db = db or connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    kept = bytes not in map(type, params)  # looked at in C, value by value
    cursor = backend.wrapped_cursor(db, _kept(db, kind=WRITES) if kept else Numbered(db.connection))
    try:
        cursor.execute(text, params)
        return cursor.fetchone() if first_row else None
    finally:
        if not kept:
            cursor.close()


def send(statements: list) -> None:
    """Run statements that return no rows, (text, params) each: on PostgreSQL several go as one statement."""
    if not statements:
        return
    if postgres() and len(statements) > 1:
        if joining.value_count(statements) <= ONE_STATEMENT_PARAMS:
            send_one(*joining.one_statement(statements))
            return
        with batched(statements):
            pass  # nothing to read back
        return
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)
