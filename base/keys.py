"""Primary keys taken from their sequences ahead of the INSERT (PostgreSQL), so that rows others point
at can go in a write's batch (`base.sql.insert_later`) rather than each on its own to learn its key."""

from __future__ import annotations

import functools

from django.db import connection

from base import json_rows
from base.sql import fetch_many, postgres


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
    return json_rows.integer_rows(f"SELECT nextval('{name}') FROM generate_series(1, %s)"), [count]


def reserve_keys(groups) -> bool:
    """Give each group of new instances (one model each) keys from its sequence, all in one round trip,
    so they can be INSERTed with the write's other statements; False, giving none, where keys come only
    from the INSERT (SQLite)."""
    if not postgres():
        return False
    found = fetch_many([next_ids(type(objs[0]), len(objs)) for objs in groups])
    for objs, rows in zip(groups, found, strict=True):
        for obj, (key,) in zip(objs, rows, strict=True):
            obj.pk = key
    return True
