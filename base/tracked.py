"""What a write saves: an instance's values as loaded (`remember`), and the fields that differ since
(`changes`), so a write sends exactly those and nothing else."""

from __future__ import annotations

import copy
import functools
import itertools
import operator

from django.db.models import JSONField

from base import backend


@functools.cache
def written_fields(model) -> tuple[str, ...]:
    """Every column of `model` a write may change: each concrete field but the key, as the model says."""
    return tuple(field.attname for field in model._meta.concrete_fields if not field.primary_key)


@functools.cache
def _values_of(model):
    """Reads the written fields' values of an instance of `model` (base.backend.field_values)."""
    return backend.field_values(written_fields(model))


@functools.cache
def _json_positions(model) -> tuple[int, ...]:
    """Where in `written_fields(model)` the JSON fields are: the only values a write can change in place."""
    written = [field for field in model._meta.concrete_fields if not field.primary_key]
    return tuple(i for i, field in enumerate(written) if isinstance(field, JSONField))


def copied(value):
    """A copy of a JSON value (dicts, lists and scalars), made without deepcopy's general machinery."""
    kind = type(value)
    if kind is dict:
        return {key: copied(item) for key, item in value.items()}
    if kind is list:
        return [copied(item) for item in value]
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
            kept[i] = copied(value)
    return tuple(kept)


def remember(obj, *, by_identity: frozenset = frozenset()):
    """Keep an instance's values as loaded, so `changes` can tell what a write altered; return it.

    JSON values are copied, so a change made in place still shows. A field in `by_identity` is
    compared by identity instead (a large document a write only ever replaces, never alters).
    """
    model = type(obj)
    obj.loaded_values = _kept(model, _values_of(model)(obj), by_identity)
    obj.loaded_by_identity = by_identity
    return obj


def remember_as(obj, values: tuple, *, by_identity: frozenset = frozenset()):
    """`remember` with the values as loaded given: each written field's value, in `written_fields`
    order, equal to the instance's own and never changed by anyone (a JSON value the instance holds a
    copy of, or, for a field in `by_identity`, the very object it holds); return the instance."""
    obj.loaded_values = values
    obj.loaded_by_identity = by_identity
    return obj


def changes(obj) -> dict:
    """The fields of a remembered instance that differ from what was loaded.

    An instance never remembered has every field changed. A write saves each instance once
    (runs.store.save), so what is found is not remembered as saved: `remember` the instance again
    before asking a second time.
    """
    model = type(obj)
    now = _values_of(model)(obj)
    loaded = getattr(obj, "loaded_values", None)
    if loaded is None:
        return dict(zip(written_fields(model), now, strict=True))
    by_identity = obj.loaded_by_identity
    if not by_identity and now == loaded:
        return {}  # the common case, compared in C
    names = written_fields(model)
    if len(loaded) != len(now):
        raise ValueError(f"{len(loaded)} values remembered for {len(now)} fields of {model.__name__}")
    found = {}
    # Only the fields whose value is not the very object loaded are looked at, found in C.
    for i in itertools.compress(range(len(names)), map(operator.is_not, now, loaded)):
        name, value = names[i], now[i]
        if name in by_identity or value != loaded[i]:
            found[name] = value
    return found
