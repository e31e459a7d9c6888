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
from django.dispatch import Signal
from django.utils.functional import cached_property

from base import backend
from base.backend import UNDOCUMENTED

ROOT = Path(__file__).resolve().parents[2]
OWNERS = {cls.__name__: cls for cls in (
    BaseDatabaseWrapper, BaseDatabaseOperations, Field, BaseExpression, FieldCacheMixin, ForeignObject, Signal,
)}
APPS = ("accounts", "api", "base", "config", "processes", "runs", "work")
# How a direct call of each looks in code.
DIRECT = re.compile(
    r"\.ops\.|\.get_col\(|get_db_converters\(|\b(?:db|connection|wrapper)\.make(?:_debug)?_cursor\(|"
    r"\.queries_logged\b|\.wrap_database_errors\b|\.is_cached\(|\.[gs]et_cached_value\(|(?<!backend)\.target_field\b|"
    r"\.related_fields\b|\.receivers\b"
)


@pytest.mark.parametrize("name", sorted(UNDOCUMENTED))
def test_each_undocumented_name_is_still_there_as_called(name):
    owner, attribute = name.split(".")
    parameters = UNDOCUMENTED[name]
    # An attribute each instance is given (a signal's receivers) is found on an instance, not its class.
    holder = OWNERS[owner]() if parameters == "an instance's list" else OWNERS[owner]
    found = inspect.getattr_static(holder, attribute, None)
    assert found is not None, f"Django no longer has {name}: base/backend.py must change with this upgrade"
    if parameters == "an instance's list":
        assert isinstance(found, list), f"{name} is no longer a list"
        return
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


def _project_models():
    from django.apps import apps

    return [model for model in apps.get_models() if model.__module__.split(".")[0] in APPS]


@pytest.mark.parametrize("model", _project_models(), ids=lambda model: model._meta.label)
def test_an_instance_loaded_is_the_one_from_db_builds(model):
    # backend.loaded stands on where Model.__init__ keeps each value (UNDOCUMENTED_LOADING): an upgrade
    # that moves them fails here, for every model of the project.
    values = [object() for _field in model._meta.concrete_fields]
    fast, reference = backend.loaded(model, "default", values), model.from_db("default", None, values)
    assert type(fast) is model
    assert {k: v for k, v in vars(fast).items() if k != "_state"} == {k: v for k, v in vars(reference).items() if k != "_state"}
    assert (type(fast._state), fast._state.adding, fast._state.db) == (type(reference._state), False, "default")
    assert fast.pk is reference.pk


@pytest.mark.parametrize("model", _project_models(), ids=lambda model: model._meta.label)
def test_an_instance_loaded_from_a_dict_is_the_one_from_db_builds(model):
    values = [object() for _field in model._meta.concrete_fields]
    row = {field.attname: value for field, value in zip(model._meta.concrete_fields, values, strict=True)}
    [fast], reference = backend.loaded_from(model, "default", [row]), model.from_db("default", None, values)
    assert type(fast) is model
    assert {k: v for k, v in vars(fast).items() if k != "_state"} == {k: v for k, v in vars(reference).items() if k != "_state"}
    assert (type(fast._state), fast._state.adding, fast._state.db) == (type(reference._state), False, "default")
    assert vars(fast) is not row  # each instance has its own copy


@pytest.mark.parametrize("model", _project_models(), ids=lambda model: model._meta.label)
def test_an_instance_created_is_the_one_its_class_makes(model):
    # backend.created stands on the same: every field's default where Model.__init__ puts it, and each
    # value given set as __init__ sets it (a relation's instance cached, its key taken).
    fast, reference = backend.created(model), model()

    def values(obj):
        # A default made by calling (a time, a new dict) is another object each time: compared by type.
        made = {field.attname for field in model._meta.concrete_fields if callable(field.default)}
        return {k: type(v) if k in made else v for k, v in vars(obj).items() if k != "_state"}

    assert type(fast) is model and values(fast) == values(reference)
    assert (type(fast._state), fast._state.adding, fast._state.db) == (type(reference._state), True, None)
    relations = [field for field in model._meta.concrete_fields if field.many_to_one and not field.null]
    if relations:
        related = relations[0]
        target = related.related_model(pk=7)
        fast, reference = backend.created(model, **{related.name: target}), model(**{related.name: target})
        assert values(fast) == values(reference)
        assert getattr(fast, related.attname) == 7 and getattr(fast, related.name) is target
        assert fast._state.db == reference._state.db == target._state.db == "default"
        unsaved = related.related_model()
        fast = backend.created(model, **{related.name: unsaved})
        assert getattr(fast, related.attname) is None and getattr(fast, related.name) is unsaved
        # One read from the database, as a write holds its run: the key taken, the instance kept.
        loaded = related.related_model(pk=8)
        loaded._state.adding, loaded._state.db = False, "default"
        fast, reference = backend.created(model, **{related.name: loaded}), model(**{related.name: loaded})
        assert values(fast) == values(reference)
        assert getattr(fast, related.attname) == 8 and getattr(fast, related.name) is loaded
        assert fast._state.db == reference._state.db == "default"


@pytest.mark.parametrize("model", _project_models(), ids=lambda model: model._meta.label)
def test_every_field_given_is_kept_as_the_constructor_keeps_it(model):
    # Each value given by attname is kept where the constructor keeps it, for every model.
    given = {field.attname: object() for field in model._meta.concrete_fields if not field.primary_key}
    fast, reference = backend.created(model, **given), model(**given)
    assert {k: v for k, v in vars(fast).items() if k != "_state"} == {k: v for k, v in vars(reference).items() if k != "_state"}
    for attname, value in given.items():
        assert getattr(fast, attname) is value


def test_a_relation_of_another_kind_given_by_name_is_set_by_its_class():
    # A one-to-one field given an instance by its name is the constructor's to set (its descriptor),
    # never kept as the instance under the key's attname.
    from runs.models import Run, RunSearch

    run = Run(pk=5)
    run._state.adding, run._state.db = False, "default"
    fast, reference = backend.created(RunSearch, run=run, document="d"), RunSearch(run=run, document="d")
    assert fast.run_id == reference.run_id == 5 and fast.run is run
    assert backend.created(RunSearch, run_id=6).run_id == 6


def test_created_refuses_what_the_constructor_refuses():
    from runs.models import Passage

    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        backend.created(Passage, colour="red")


def test_a_guarded_field_given_is_set_once_as_the_constructor_sets_it():
    from runs.models import Run, RunStep

    # A state field refuses a second assignment (runs.transitions): its default must not come first.
    assert backend.created(Run, state="waiting").state == Run(state="waiting").state == "waiting"
    assert backend.created(RunStep, state="ready", attempt=2).attempt == 2


def _row(model):
    return [object() for _field in model._meta.concrete_fields]


# How each builder makes an Agent; with init receivers listening, each goes through Django's own path.
BUILDERS = {
    "loaded": lambda model: backend.loaded(model, "default", _row(model)),
    "loaded_rows": lambda model: backend.loaded_rows(model, "default", [_row(model)])[0],
    "loaded_from": lambda model: backend.loaded_from(
        model, "default", [{field.attname: None for field in model._meta.concrete_fields}])[0],
    "created": lambda model: backend.created(model, name="a"),
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_a_model_with_init_receivers_is_built_through_django(builder):
    from django.db.models.signals import post_init

    from accounts.models import Agent

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Agent)
    try:
        built = BUILDERS[builder](Agent)
    finally:
        post_init.disconnect(receiver, sender=Agent)
    assert seen == [built]
    if builder == "created":
        assert built.name == "a"
