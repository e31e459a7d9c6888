"""The write path's reads and writes through the plain Django ORM, to weigh what base.sql buys.

`plain_orm()` swaps base.sql's functions, for as long as it is entered, for what a Django developer
would write in their place; every caller (runs.store, runs.idempotency, the engine, the tools) stays
as it is, so the two are measured on the same code (`bench/inproc.py --orm`):

- a read of model rows is a queryset: the run `select_for_update()` by its key (or by its lease's, in
  a subquery), its steps `filter(run=...)`, a requestId's record `filter(organization=..., request_id=...)`;
- a changed row is saved with `save(update_fields=[the fields it changed])`, a new one with `save()`, or
  `bulk_create` when several of one model are new; the keys come back from the INSERT;
- each statement is its own round trip: nothing is held back to go with others, and no keys are
  reserved ahead from a sequence;
- a write to a run locks it in a transaction, as `select_for_update()` asks, and a new run is written
  in one: there is no optimistic form (`base.sql.optimistic` refuses at once, so the write takes the
  locked path).

What changed in a row is still told by base.tracked's `changes`, which the ORM has no counterpart for;
the statements the code writes as text (the published-version lookup, get_work's queries, a notice's
UPDATE) run as they are, each on its own. A read whose condition is not one of the forms below is left
to base.sql, and counted in `LEFT_TO_THE_LAYER`, so a new form shows instead of skewing the figures.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
from collections import Counter

from django.apps import apps
from django.db import connection
from django.db.models import Subquery

from base import keys, sql, tracked

# What the ORM replaces in base.sql, by name; base.tracked's `changes` is wrapped only to mark which
# instance its fields were read from.
REPLACED = (
    "select_many", "select", "fetch_many", "fetch", "execute", "insert", "insert_later", "update", "deferred",
    "guard", "optimistic",
)
# What it replaces in base.keys: no key is taken ahead of its INSERT.
KEYS_REPLACED = {"next_ids": lambda model, count=1: None, "reserve_keys": lambda groups: False}

LEFT_TO_THE_LAYER: Counter = Counter()

# One condition of a read: `t.<column> = %s`, `t.<column> + 0 = %s` (a planner hint: the same
# condition), or `t.<column> = (SELECT <column> FROM <table> WHERE <column> = %s)`.
_CONDITION = re.compile(r't\.(\w+)(?: \+ 0)? = (?:%s|\(SELECT (\w+) FROM "?(\w+)"? WHERE (\w+) = %s\))')


@contextlib.contextmanager
def plain_orm():
    """Run what is inside with base.sql's reads and writes done by the plain ORM."""
    layer = {name: getattr(sql, name) for name in REPLACED}
    layer["changes"] = tracked.changes
    replacements = _replacements(layer)
    tracked.changes = replacements.pop("changes")
    keys_layer = {name: getattr(keys, name) for name in KEYS_REPLACED}
    for name, function in KEYS_REPLACED.items():
        setattr(keys, name, function)  # as on SQLite: each INSERT gives its key
    for name, function in replacements.items():
        setattr(sql, name, function)
    try:
        yield
    finally:
        tracked.changes = layer.pop("changes")
        for name, function in layer.items():
            setattr(sql, name, function)
        for name, function in keys_layer.items():
            setattr(keys, name, function)


def _replacements(layer: dict) -> dict:
    class Changed(dict):
        """A row's changed fields ({attname: value}), with the instance they were read from."""

        instance = None

    def changes(obj) -> dict:
        found = Changed(layer["changes"](obj))
        found.instance = obj
        return found

    def update(model, pk, changes: dict) -> None:
        if not changes:
            return
        instance = getattr(changes, "instance", None)
        if instance is not None and instance.pk == pk:
            instance.save(update_fields=list(changes))
        else:
            model._default_manager.filter(pk=pk).update(**changes)

    def insert(*objs) -> None:
        for model, group in itertools.groupby(objs, type):
            rows = list(group)
            if len(rows) == 1:
                rows[0].save(force_insert=True)
            else:
                model._default_manager.bulk_create(rows)

    def select_many(queries, *, raw=()) -> list[list]:
        found = []
        for model, where, params, suffix in queries:
            queryset = _queryset(model, where, params, suffix)
            if queryset is None:
                LEFT_TO_THE_LAYER[(model.__name__, where, suffix)] += 1
                found.append(layer["select_many"]([(model, where, params, suffix)])[0])
            else:
                found.append(list(queryset))
        return found + fetch_many(list(raw))

    def select(model, where: str, params, *, suffix: str = "") -> list:
        return select_many([(model, where, params, suffix)])[0]

    @contextlib.contextmanager
    def optimistic(*, new_rows=False):
        raise sql.NeedsLock("the plain ORM writes in a transaction")
        yield  # a generator, as contextmanager needs

    return {
        "select_many": select_many,
        "select": select,
        "fetch_many": fetch_many,
        "fetch": lambda text, params: fetch_many([(text, params)])[0],  # on Django's cursor, as any statement
        "execute": execute,
        "insert": insert,
        "insert_later": insert,  # no batch to wait for: inserted at once, its key read back
        "update": update,
        "deferred": contextlib.nullcontext,
        "changes": changes,
        "guard": lambda model, pk, changes, expected: update(model, pk, changes),  # under the run's lock
        "optimistic": optimistic,
    }


def fetch_many(statements) -> list[list[tuple]]:
    results = []
    with connection.cursor() as cursor:
        for text, params in statements:
            cursor.execute(text, params)
            results.append(cursor.fetchall())
    return results


def execute(text: str, params: list, *, guardable: bool = False) -> None:
    with connection.cursor() as cursor:
        cursor.execute(text, params)


def _queryset(model, where: str, params, suffix: str):
    """The queryset a Django developer would write for base.sql's read, or None for a form not known here."""
    plan = _plan(model, where, suffix.strip())
    if plan is None:
        return None
    conditions, lock = plan
    filters = {}
    for (name, inner, inner_value, inner_key), value in zip(conditions, params, strict=True):
        if inner is None:
            filters[name] = value
        else:
            filters[name] = Subquery(inner._default_manager.filter(**{inner_key: value}).values(inner_value))
    queryset = model._default_manager.filter(**filters)
    return queryset.select_for_update() if lock else queryset


@functools.cache
def _plan(model, where: str, suffix: str):
    """Each condition of `where` as (field, and for a subquery: its model, the field it gives, the field
    it looks up), and whether the rows are locked; None when any part is not a known form."""
    if suffix not in ("", "FOR UPDATE"):
        return None
    conditions = []
    for text in where.split(" AND "):
        match = _CONDITION.fullmatch(text.strip())
        if match is None:
            return None
        column, inner_column, inner_table, inner_where = match.groups()
        name = _attname(model, column)
        if inner_table is None:
            condition = (name, None, None, None)
        else:
            inner = _model_of(inner_table)
            if inner is None:
                return None
            condition = (name, inner, _attname(inner, inner_column), _attname(inner, inner_where))
        if name is None or (condition[1] is not None and None in condition[2:]):
            return None
        conditions.append(condition)
    return tuple(conditions), suffix == "FOR UPDATE"


def _attname(model, column: str) -> str | None:
    for field in model._meta.concrete_fields:
        if field.column == column:
            return field.attname
    return None


def _model_of(table: str):
    for model in apps.get_models():
        if model._meta.db_table == table:
            return model
    return None
