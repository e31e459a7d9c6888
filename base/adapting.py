"""Values as a statement sends them: each field's value adapted as the ORM adapts it for a save
(`get_db_prep_save`), without the call where it would make nothing new of the value. base.sql keeps,
with each statement it builds, its fields and what each sends as it is (`with_kinds`).
"""

from __future__ import annotations

import datetime as dt
import functools

from django.conf import settings
from django.db.models import JSONField
from django.db.models import fields as model_fields
from psycopg.types.json import Jsonb

from base import backend, json_text
from base.sending import postgres


def insert_values(obj, fields, plan, db) -> list:
    """The values an INSERT of `fields` sends for `obj`, by its plan (`insert_plan`), as save() reads them."""
    getter, relations, own_pre_save = plan
    for field in relations:
        # As save() does: a foreign key set to an instance saved since takes that instance's key.
        if obj.__dict__.get(field.attname) is None:
            related = backend.cached_related(field, obj)
            if related is not None and related.pk is not None:
                setattr(obj, field.name, related)  # as save() does: the key taken, the instance kept
    values = getter(obj)
    if own_pre_save:
        values = list(values)
        for i, field in own_pre_save:
            values[i] = field.pre_save(obj, True)
    return prepped(fields, values, db)


class _Never:
    """No value's type: a field whose values always go through `_prep`."""


class Kinds(tuple):
    """A statement's fields as `with_kinds` gives them, and which values `prepped` looks at, learned for
    each combination of value types it meets: a value's type alone decides whether it goes as it is."""

    def __new__(cls, items):
        kinds = super().__new__(cls, items)
        kinds.looks = {}  # the values' types, in field order: where `_prep` is called
        return kinds


# The combinations of value types each statement keeps what to look at for (`Kinds.looks`): a statement's
# values come in a few of them (a time set or not, a document or none).
KEPT_LOOKS = 64


def with_kinds(fields) -> Kinds:
    """Each field with `passes(field)`, and the type of values it sends as they are without a look
    (`prepped`): a plain integer, string or boolean field's; `_Never` for the rest."""
    out = []
    for field in fields:
        kind = passes(field)
        out.append((field, kind, kind if kind in (int, str, bool) else _Never))
    return Kinds(out)


def prepped(fields: Kinds, values, db) -> list:
    """Each value as `_prep` makes it, for fields from `with_kinds`; None and a plain field's value of
    its exact type go as they are, without the call. Which values those are is worked out once for
    each combination of the values' types (in C, from their types alone), so a statement's plain values
    cost no step of Python each."""
    values = list(values)
    types = tuple(map(type, values))
    looks = fields.looks.get(types)
    if looks is None:
        looks = _looks(fields, types)
    for i, field, kind in looks:
        values[i] = _prep(field, kind, values[i], db)
    return values


def _looks(fields: Kinds, types: tuple) -> tuple:
    """Where `prepped` calls `_prep` for values of `types`: each value neither None nor of its field's plain type."""
    if len(types) != len(fields):
        raise ValueError(f"{len(types)} values for {len(fields)} fields")
    looks = tuple(
        (i, field, kind)
        for i, ((field, kind, plain), value_type) in enumerate(zip(fields, types, strict=True))
        if value_type is not type(None) and value_type is not plain
    )
    if len(fields.looks) >= KEPT_LOOKS:
        fields.looks.clear()
    fields.looks[types] = looks
    return looks


def insert_plan(model, fields: tuple) -> tuple:
    """How an INSERT of `fields` reads an instance of `model`: all their attributes at once (in C), then
    `pre_save` only for the fields whose class makes it more than reading the attribute (auto_now ones)."""
    getter = backend.field_values(field.attname for field in fields)
    relations = tuple(field for field in fields if field.is_relation)
    own_pre_save = tuple((i, field) for i, field in enumerate(fields) if _own_pre_save(field))
    return getter, relations, own_pre_save


def _own_pre_save(field) -> bool:
    """Whether `field.pre_save` may give other than the attribute's value: a field class with a pre_save
    of its own, but Django's date and time fields without auto_now or auto_now_add, whose pre_save is
    then the attribute's value."""
    if type(field).pre_save is model_fields.Field.pre_save:
        return False
    if type(field) in (model_fields.DateTimeField, model_fields.DateField, model_fields.TimeField):
        return bool(field.auto_now or field.auto_now_add)
    return True


def db_value(field, value, db):
    """`field.get_db_prep_save(value, db)`, skipping the call where it would make nothing new of `value`."""
    return _prep(field, passes(field), value, db)


def _prep(field, kind, value, db):
    """`db_value` with `passes(field)` already known: statements keep it with their fields."""
    if kind is not None:
        if value is None or (type(value) is kind and (kind is not dt.datetime or value.utcoffset() is not None)):
            return value
        if kind is _JSON and (type(value) is dict or type(value) is list):
            # What the field's get_db_prep_save makes of a document, written by orjson (base.json_text).
            return Jsonb(value, dumps=json_text.dumped)
        if kind is str and isinstance(value, str):
            return str.__str__(value)  # a choice's member, which a text field sends as it is: `_plain`
    return _plain(field.get_db_prep_save(value, db))


def _plain(value):
    """`value`, or for a subclass of str or int (a choice's member, runs.transitions' states among them)
    the plain text or number it stands for, which is what the driver sends for it: psycopg finds a
    subclass's dumper by walking its class's ancestry, in Python, at every statement that sends one."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or not isinstance(value, (str, int)):
        return value
    return str.__str__(value) if isinstance(value, str) else int.__int__(value)


class _JSON:
    """`passes` of a JSONField without an encoder of its own, on PostgreSQL: its documents (dicts and
    lists) go as psycopg's Jsonb, as Django's PostgreSQL backend adapts them (adapt_json_value)."""


# Fields whose get_db_prep_save makes nothing new of a value of this exact type (or None): such a value
# goes as it is, without the call. (On PostgreSQL Django wraps an int in the column's integer type, for
# parameters bound on the server; the column gives an INSERT's or UPDATE's value that type all the same.)
# A subclass counts as its base only where it prepares values as its base does (`_as_base`); others may
# prepare them their own way.
_PLAIN_FIELDS = {
    int: (
        model_fields.IntegerField, model_fields.BigIntegerField, model_fields.SmallIntegerField,
        model_fields.PositiveIntegerField, model_fields.PositiveSmallIntegerField,
        model_fields.PositiveBigIntegerField, model_fields.AutoField, model_fields.BigAutoField,
    ),
    str: (model_fields.CharField, model_fields.TextField),
    bool: (model_fields.BooleanField,),
}


# What makes a field's value into what a statement sends (Field.get_db_prep_save and what it calls).
_PREPARING = ("get_db_prep_save", "get_db_prep_value", "get_prep_value", "to_python")


def _as_base(kind: type, base: type) -> bool:
    """Whether field class `kind` is a subclass of `base` that prepares values as `base` does (a
    runs.transitions.StateField is a CharField that guards how its value is set, not how it is sent)."""
    return issubclass(kind, base) and all(getattr(kind, name) is getattr(base, name) for name in _PREPARING)


@functools.cache
def passes(field) -> type | None:
    """The Python type of values that `field` may send to the database as they are, or None.

    A foreign key sends its target's key as it is. An aware datetime goes unchanged to PostgreSQL,
    which takes it with its offset; SQLite needs it turned to text.
    """
    if field.is_relation:
        return passes(backend.target_field(field)) if field.many_to_one or field.one_to_one else None
    kind = type(field)
    for python_type, field_types in _PLAIN_FIELDS.items():
        if kind in field_types or any(_as_base(kind, base) for base in field_types):
            return python_type
    if kind is model_fields.DateTimeField and postgres() and settings.USE_TZ:
        return dt.datetime
    if kind is JSONField and field.encoder is None and postgres():
        return _JSON
    return None
