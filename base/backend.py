"""Every Django name the project calls that Django's documentation does not offer to applications, in one
place. tests/base/test_backend.py names each of them and fails loudly when a Django upgrade changes one;
the rest of the project calls the functions here, never those names directly.

`UNDOCUMENTED` lists them as `owner.name`, with the parameters each is called with.
"""

from __future__ import annotations

import functools
import operator

from django.conf import settings
from django.db import connection
from django.db.models import Model, signals
from django.db.models.base import ModelState

UNDOCUMENTED = {
    # The backend's own quoting of a table or column name, and an integer column's range.
    "BaseDatabaseOperations.quote_name": ("self", "name"),
    "BaseDatabaseOperations.integer_field_range": ("self", "internal_type"),
    # The converters the ORM applies to a column's raw values as it reads them (from_db_value among them).
    "BaseDatabaseOperations.get_db_converters": ("self", "expression"),
    "Field.get_col": ("self", "alias", "output_field"),
    "BaseExpression.get_db_converters": ("self", "connection"),
    # A driver cursor wrapped as the connection wraps its own (query logging and error translation).
    "BaseDatabaseWrapper.make_cursor": ("self", "cursor"),
    "BaseDatabaseWrapper.make_debug_cursor": ("self", "cursor"),
    "BaseDatabaseWrapper.queries_logged": None,  # a property
    "BaseDatabaseWrapper.wrap_database_errors": None,  # a property
    # A relation's cached instance, as Model.save() reads it.
    "FieldCacheMixin.is_cached": ("self", "instance"),
    "FieldCacheMixin.get_cached_value": ("self", "instance", "default"),
    "FieldCacheMixin.set_cached_value": ("self", "instance", "value"),
    "ForeignObject.related_fields": None,  # a property
    "ForeignObject.target_field": None,  # a property
    # Whether a signal has receivers for a sender (`loaded` builds instances without sending pre_init
    # and post_init where none listen), and whether it has any at all (an instance's list).
    "Signal.has_listeners": ("self", "sender"),
    "Signal.receivers": "an instance's list",
}

# What `loaded` and `created` build an instance with, which tests/base/test_backend.py checks against
# Model.from_db and the model's own constructor for every model: the class of `Model._state`
# (documented, the class not), and each field's value kept in the instance's `__dict__` under its
# attname, where Model.__init__ puts it.
UNDOCUMENTED_LOADING = ("django.db.models.base.ModelState", "Model.__dict__[field.attname]")


def quote_name(name: str) -> str:
    return connection.ops.quote_name(name)


def integer_range(field) -> tuple[int, int]:
    """The smallest and largest value the database stores in `field`'s integer column."""
    return connection.ops.integer_field_range(field.get_internal_type())


def column_converters(field, table: str, db) -> tuple[object, list]:
    """The column expression for `field` of `table`, and the converters the ORM runs on its raw values."""
    col = field.get_col(table)
    return col, db.ops.get_db_converters(col) + col.get_db_converters(db)


def wrapped_cursor(db, raw):
    """A driver cursor wrapped as `db` wraps its own: logged when queries are, errors translated."""
    return db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)


def database_errors(db):
    """A context in which the driver's errors become Django's (IntegrityError, OperationalError, ...)."""
    return db.wrap_database_errors


def cached_related(field, obj):
    """The instance a relation of `obj` holds already, or None when it holds none."""
    return field.get_cached_value(obj) if field.is_cached(obj) else None


def target_field(field):
    """The field a foreign key points at."""
    return field.target_field


def _heard_at_init(model) -> bool:
    """Whether pre_init or post_init has a receiver for `model`: told without asking for the model where
    neither has any receiver at all, as in this project."""
    if not signals.pre_init.receivers and not signals.post_init.receivers:
        return False
    return signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model)


def loaded(model, alias: str, values):
    """An instance of `model` from a row of every concrete field's value in field order, as
    `model.from_db(alias, None, values)` builds it, without Model.__init__'s work for arguments of
    every other shape: each value set where __init__ sets it. A model with an __init__ of its own, or
    with pre_init or post_init receivers, is built by from_db."""
    attnames = _loading_plan(model)
    if attnames is None or _heard_at_init(model):
        return model.from_db(alias, None, values)
    return _instance(model, attnames, alias, values)


def created(model, **values):
    """A new instance of `model`, as `model(**values)` makes it from fields given by name or attname:
    each other field's default, then each value set as an attribute (a relation as its descriptor
    sets it, as __init__ does), without the rest of Model.__init__'s work for arguments of every other
    shape (positional values, properties such as `pk`). A model with an __init__ of its own, or with
    pre_init or post_init receivers, is made by its class."""
    shape = _creating_shape(model, tuple(values))
    if shape is None or _heard_at_init(model):
        return model(**values)
    constant, called, relations = shape
    obj = model.__new__(model)
    # A field given is set only once, as __init__ sets it: a guarded one (runs.transitions) refuses a second.
    kept = obj.__dict__
    kept.update(constant)
    for attname, field in called:
        kept[attname] = field.get_default()
    # Each value where __init__'s setattr keeps it: under its attname, which is its name but for a foreign
    # key given an instance (a foreign key's or a guarded state's descriptor, given a new instance that
    # holds neither the value nor a related instance, only stores it there). Those are set below.
    kept.update(values)
    state = obj._state = ModelState()
    if relations:
        routed = bool(settings.DATABASE_ROUTERS)
        for name, field, related_model, key_attname in relations:
            value = kept.pop(name)
            if not routed and type(value) is related_model and value._state.db is not None:
                # What the relation's descriptor does for a saved instance where no router decides: the
                # key taken, the instance cached, the new one's database the related one's.
                kept[field.attname] = getattr(value, key_attname)
                field.set_cached_value(obj, value)
                if state.db is None:
                    state.db = value._state.db
            else:
                setattr(obj, name, value)
    return obj


# The shapes of `created` kept (`_creating_shape`): one for each model and the names a caller gives.
CREATING_SHAPES = 1024


@functools.lru_cache(maxsize=CREATING_SHAPES)
def _creating_shape(model, names: tuple) -> tuple | None:
    """How `created` makes an instance of `model` from values given by `names`: the constant defaults of
    the fields not given, the fields not given whose default is called, and each foreign key given an
    instance by its name as (name, field, its related model, its key's attname). None for a model its
    class must make, or names the class must judge (a field given twice, a relation of another kind
    given by its name)."""
    plan = _creating_plan(model)
    if plan is None:
        return None
    constant, called, attnames, relations = plan
    given, by_name = [], []
    for name in names:
        attname = attnames.get(name)
        if attname is None:
            raise TypeError(f"{model.__name__}() got an unexpected keyword argument '{name}'")
        given.append(attname)
        if attname != name:
            relation = relations.get(name)
            if relation is None:
                return None
            by_name.append((name, *relation))
    if len(set(given)) < len(given):
        return None  # by name and by attname: the class says what that means
    return (
        {k: v for k, v in constant.items() if k not in given},
        tuple((attname, field) for attname, field in called if attname not in given),
        tuple(by_name),
    )


def loaded_rows(model, alias: str, rows) -> list:
    """`loaded` for each row of `rows`, whether the model's receivers listen asked once for them all."""
    attnames = _loading_plan(model)
    if attnames is None or _heard_at_init(model):
        return [model.from_db(alias, None, values) for values in rows]
    return [_instance(model, attnames, alias, values) for values in rows]


def loaded_from(model, alias: str, rows) -> list:
    """`loaded_rows` for rows given as dicts of every concrete field's value by attname, which each
    instance takes a copy of as it is (a dict copied whole costs a fraction of one built key by key)."""
    attnames = _loading_plan(model)
    if attnames is None or _heard_at_init(model):
        fields = model._meta.concrete_fields
        return [model.from_db(alias, None, [values[field.attname] for field in fields]) for values in rows]
    built = []
    for values in rows:
        obj = model.__new__(model)
        obj.__dict__.update(values)
        state = obj._state = ModelState()
        state.adding = False
        state.db = alias
        built.append(obj)
    return built


def field_values(names):
    """A function reading the fields `names` (attnames) of an instance as a tuple, in C: from the
    instance's `__dict__`, where each value is kept under its attname (UNDOCUMENTED_LOADING), without a
    foreign key's or a guarded state's descriptor per read; through its attributes where one is not
    there (a deferred field, which reading loads)."""
    names = tuple(names)
    if len(names) == 1:
        kept, read = (lambda values: (values[names[0]],)), (lambda obj: (getattr(obj, names[0]),))
    else:
        kept, read = operator.itemgetter(*names), operator.attrgetter(*names)

    def values_of(obj) -> tuple:
        try:
            return kept(obj.__dict__)
        except KeyError:
            return read(obj)

    return values_of


def _instance(model, attnames: tuple, alias: str, values):
    obj = model.__new__(model)
    obj.__dict__.update(zip(attnames, values, strict=True))
    state = obj._state = ModelState()
    state.adding = False
    state.db = alias
    return obj


@functools.cache
def _creating_plan(model) -> tuple | None:
    if _loading_plan(model) is None:
        return None
    constant, called, attnames, relations = {}, [], {}, {}
    for field in model._meta.concrete_fields:
        attnames[field.name] = attnames[field.attname] = field.attname
        if field.has_default() and callable(field.default):
            called.append((field.attname, field))
        else:
            constant[field.attname] = field.get_default()
        if field.many_to_one and len(field.related_fields) == 1:
            # A foreign key given an instance by its name: (field, the related model, its key's attname).
            relations[field.name] = (field, field.related_model, field.target_field.attname)
    return constant, tuple(called), attnames, relations


@functools.cache
def _loading_plan(model) -> tuple | None:
    if model.__init__ is not Model.__init__ or model.from_db.__func__ is not Model.from_db.__func__:
        return None
    return tuple(field.attname for field in model._meta.concrete_fields)
