"""Several SELECTs as one statement that PostgreSQL prepares, each one's rows coming back as JSON.

Several SELECTs sent as one simple query (`base.sending.batched`) are parsed and planned by PostgreSQL
every time they come. Here each becomes a scalar subquery of one SELECT, its rows aggregated into one
JSON array (`json_agg`): one statement, bound on the server and prepared by psycopg once its text
repeats, in one round trip. A model's row comes back as an array of its columns (`json_build_array`,
which spares the names on every row); `values` turns each back into the values the ORM would give
for each field, so `base.backend.loaded` makes the same instances either way
(tests/runs/test_json_rows.py checks this field by field, for every model it may read).

It serves a batch only where every value's JSON form says exactly what the row would have held:
- every field of each model is of a kind whose JSON form is known (`_KINDS`), and the only
  converters the ORM runs on its values are a JSONField's own, without a decoder of its own (and
  a model has at most 100 columns, the most arguments a PostgreSQL function takes);
- the session's time zone and Django's are both UTC, so a timestamp's text is the one moment;
- no query orders its rows (`json_agg` keeps the order of its input only as it happens to come);
- no query locks its rows: one statement reads with one snapshot, taken before a lock's wait, so
  rows read beside a locked one would be as they were before the lock holder committed, where each
  statement of a batch takes its snapshot once the one before it has its lock;
- each `raw` SELECT is one its caller registered as giving one integer per row (`integer_rows`), which
  comes back as a tuple of it.
Anything else goes as before, by `base.sending.batched`.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

from django.db import connection
from django.db.models import JSONField

from base import backend, json_text

# The most arguments a PostgreSQL function takes (FUNC_MAX_ARGS): json_build_array's columns.
MAX_COLUMNS = 100

# The field kinds (`get_internal_type()`) whose values JSON spells exactly, and how each JSON value
# becomes the driver's value. None: as it comes.
_KINDS = {
    "AutoField": None, "BigAutoField": None, "SmallAutoField": None,
    "IntegerField": None, "BigIntegerField": None, "SmallIntegerField": None,
    "PositiveIntegerField": None, "PositiveBigIntegerField": None, "PositiveSmallIntegerField": None,
    "CharField": None, "TextField": None, "SlugField": None, "EmailField": None,
    "BooleanField": None,
    # An integral double comes back as a JSON integer; NaN and the infinities as text float() reads.
    "FloatField": float,  # sent as text (`_column`): JSON has no -0, NaN or infinities
    "DateTimeField": dt.datetime.fromisoformat,  # ISO 8601 with the offset, +00:00 in a UTC session
    "DateField": dt.date.fromisoformat,
    "JSONField": None,  # the document itself, already parsed (a JSONField's converter would parse its text)
}


@functools.cache
def _plan(model) -> tuple | None:
    """Where in a row a JSON value needs reading to become the ORM's, and how, (position, read) each;
    None when a field of the model has no exact JSON form."""
    if len(model._meta.concrete_fields) > MAX_COLUMNS:
        return None
    plan = []
    for position, field in enumerate(model._meta.concrete_fields):
        target = backend.target_field(field) if field.many_to_one or field.one_to_one else field
        kind = target.get_internal_type()
        if kind not in _KINDS:
            return None
        _col, converters = backend.column_converters(field, model._meta.db_table, connection)
        if isinstance(field, JSONField):
            if field.decoder is not None or len(converters) != 1:
                return None
        elif converters:
            return None
        if _KINDS[kind] is not None:
            plan.append((position, _KINDS[kind]))
    return tuple(plan)


_ORDERED_OR_LOCKED = re.compile(r"\border\s+by\b|\bfor\s+(?:no\s+key\s+update|key\s+share|update|share)\b", re.IGNORECASE)

# Raw SELECTs whose every row is one integer (a key from a sequence, a row's id), which JSON spells
# exactly: registered by their callers (`integer_rows`).
_INTEGER_ROWS: set[str] = set()


def integer_rows(text: str) -> str:
    """Register a SELECT whose every row is one integer, so it can go in a statement here; return it."""
    _INTEGER_ROWS.add(text)
    return text


def serves(queries, raw=()) -> bool:
    """Whether these `base.sql.select_many` queries, (model, where, params, suffix) each, and raw SELECTs,
    (text, params) each, can go as one statement here."""
    return all(
        _plan(model) is not None and not _ORDERED_OR_LOCKED.search(suffix) for model, _where, _params, suffix in queries
    ) and all(text in _INTEGER_ROWS for text, _params in raw)


@functools.cache
def select_text(model, where: str, suffix: str) -> str:
    """`SELECT json_build_array(<the model's columns>) AS r FROM <its table> t WHERE <where> <suffix>`."""
    columns = ", ".join(_column(field) for field in model._meta.concrete_fields)
    return f"SELECT json_build_array({columns}) AS r FROM {backend.quote_name(model._meta.db_table)} t WHERE {where} {suffix}"


def _column(field) -> str:
    column = f"t.{backend.quote_name(field.column)}"
    return f"{column}::text" if field.get_internal_type() == "FloatField" else column


@functools.lru_cache(maxsize=256)
def statement(models: tuple[str, ...], raw: tuple[str, ...]) -> str:
    """One SELECT of each statement's rows as a JSON array (text), in order, NULL where it found none:
    first the `select_text` ones, each row an array, then the raw ones, each row an object."""
    return "SELECT " + ", ".join(
        [f"(SELECT json_agg(q.r)::text FROM ({text}) q)" for text in models]
        + [f"(SELECT json_agg(q)::text FROM ({text}) q)" for text in raw]
    )


def values(model, found: str | None) -> list[list]:
    """The rows of one model's JSON array as `base.backend.loaded` takes them: each field's value in field
    order, already as the ORM gives it."""
    if found is None:
        return []
    rows = json_text.loads(found)
    for position, read in _plan(model):
        for row in rows:
            if row[position] is not None:
                row[position] = read(row[position])
    return rows


def raw_rows(found: str | None) -> list[tuple]:
    """The rows of a raw SELECT's JSON array, as tuples of their values in column order."""
    return [] if found is None else [tuple(row.values()) for row in json_text.loads(found)]
