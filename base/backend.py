"""Every Django name the project calls that Django's documentation does not offer to applications, in one
place. tests/base/test_backend.py names each of them and fails loudly when a Django upgrade changes one;
the rest of the project calls the functions here, never those names directly.

`UNDOCUMENTED` lists them as `owner.name`, with the parameters each is called with.
"""

from __future__ import annotations

from django.db import connection

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
    "ForeignObject.target_field": None,  # a property
}


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
