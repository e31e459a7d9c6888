"""The Django names the project uses beyond Django's documentation are the ones base/backend.py lists,
called from there alone, and each still exists with the parameters it is called with."""

import inspect
import re
from pathlib import Path

import pytest
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Field
from django.db.models.expressions import BaseExpression
from django.db.models.fields.mixins import FieldCacheMixin
from django.db.models.fields.related import ForeignObject
from django.utils.functional import cached_property

from base.backend import UNDOCUMENTED

ROOT = Path(__file__).resolve().parents[2]
OWNERS = {cls.__name__: cls for cls in (
    BaseDatabaseWrapper, BaseDatabaseOperations, Field, BaseExpression, FieldCacheMixin, ForeignObject,
)}
APPS = ("accounts", "api", "base", "config", "processes", "runs", "work")
# How a direct call of each looks in code.
DIRECT = re.compile(
    r"\.ops\.|\.get_col\(|get_db_converters\(|\b(?:db|connection|wrapper)\.make(?:_debug)?_cursor\(|"
    r"\.queries_logged\b|\.wrap_database_errors\b|\.is_cached\(|\.get_cached_value\(|(?<!backend)\.target_field\b"
)


@pytest.mark.parametrize("name", sorted(UNDOCUMENTED))
def test_each_undocumented_name_is_still_there_as_called(name):
    owner, attribute = name.split(".")
    found = inspect.getattr_static(OWNERS[owner], attribute, None)
    assert found is not None, f"Django no longer has {name}: base/backend.py must change with this upgrade"
    parameters = UNDOCUMENTED[name]
    if parameters is None:
        assert isinstance(found, property | cached_property), f"{name} is no longer a property"
    else:
        signature = tuple(inspect.signature(found).parameters)[: len(parameters)]
        assert signature == parameters, f"{name} now takes {signature}, base/backend.py calls it with {parameters}"


def test_only_base_backend_calls_them():
    callers = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if path == ROOT / "base" / "backend.py" or "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if DIRECT.search(line):
                    callers.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not callers, "\n".join(callers)
