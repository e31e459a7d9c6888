"""A write saves every field it changes, of every row it writes: what is saved comes from the model, not a list.

Each test changes one concrete field of a loaded run, step or work item, flushes the write, and reads
the row back: the database must hold what the write held, for that field and every other.
"""

import datetime as dt

import pytest
from django.db import models, transaction
from django.utils import timezone

from accounts.models import Group, Organization, User
from base import sql, tracked
from runs import engine
from runs.models import Lease, Run, RunStep, WorkItem
from runs.transitions import TABLES, move
from tests.runs.conftest import rid
from tests.runs.test_agent_loop import ONE_STEP, TWO_STEPS

REVIEW = """---
name: review
description: A person approves.
steps:
  - id: check
    person: reviewers
    approve: Check it.
  - id: done
    finish: ok
---
"""


def written(model) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields if not field.primary_key]


@pytest.fixture
def world(publish, agent, make_person, org):
    """A run waiting on a person (a step and an open item), and other rows for keys to point at."""
    publish(ONE_STEP)
    publish(TWO_STEPS)
    publish(REVIEW)
    make_person("r@example.com", groups=["reviewers"])
    waiting = agent.write("start_run", process="review", inputs={})["run"]["id"]
    other = agent.write("start_run", process="two-steps", inputs={})["run"]["id"]
    claimed = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    agent.write("claim", runId=claimed, stepId="work")
    return {
        "run": int(waiting.removeprefix("r_")),
        Organization: Organization.objects.create(slug="elsewhere", name="Elsewhere").pk,
        Run: int(other.removeprefix("r_")),
        RunStep: RunStep.objects.get(run_id=int(other.removeprefix("r_")), step_id="first").pk,
        Lease: Lease.objects.get().pk,
        Group: Group.objects.create(organization=org, name="others").pk,
        User: User.objects.create_user("other@example.com", "pw").pk,
        "version": Run.objects.get(pk=int(other.removeprefix("r_"))).version_id,
    }


def sample(field, current, world):
    """A value for `field` other than `current`, that the database takes."""
    if field.is_relation:
        target = field.related_model
        if target._meta.model_name == "processversion":
            return world["version"]
        return world[target]
    if isinstance(field, models.BooleanField):
        return not current
    if isinstance(field, (models.IntegerField, models.PositiveIntegerField)):
        return (current or 0) + 7
    if isinstance(field, models.DateTimeField):
        return (current or timezone.now()) + dt.timedelta(hours=3)
    if isinstance(field, models.JSONField):
        return {"changed": [1, "two"]}
    if isinstance(field, (models.CharField, models.TextField)):
        return "changed"[: field.max_length or 100]
    raise AssertionError(f"no sample for {field!r}")


def assert_saved(obj) -> None:
    model = type(obj)
    stored = model.objects.get(pk=obj.pk)
    for name in written(model):
        assert getattr(stored, name) == getattr(obj, name), (model.__name__, name)


def change_and_flush(world, pick, name, *, also=()):
    """Load the waiting run under its lock, change `name` on the row `pick` chooses, flush; return the row."""
    with transaction.atomic():
        txn = engine.load_for_write(world["run"])
        obj = pick(txn)
        field = next(f for f in type(obj)._meta.concrete_fields if f.attname == name)
        if name == "state":
            # A state changes only along its table (runs.transitions): to a state other than its own.
            value = sorted(s for s in TABLES[type(obj)._meta.label][obj.state] if s and s != obj.state)[0]
            move(obj, value)
        else:
            value = sample(field, getattr(obj, name), world)
            setattr(obj, name, value)
        for other, other_value in also:
            setattr(obj, other, other_value)
        engine.flush(txn)
        assert_saved(obj)
        assert_saved(txn.run)
        for row in txn.steps.values():
            assert_saved(row)
    return obj, value


@pytest.mark.parametrize("name", written(Run))
def test_every_field_of_a_run_a_write_changes_is_saved(world, name):
    run, value = change_and_flush(world, lambda txn: txn.run, name)
    # The run's state, wake-up and time are the write's to work out: what it worked out is saved.
    if name not in ("state", "wake_at", "updated_at", "revision"):
        assert getattr(Run.objects.get(pk=run.pk), name) == value
    if name == "revision":  # every save moves it one on from what the write set
        assert Run.objects.get(pk=run.pk).revision == value + 1


@pytest.mark.parametrize("name", written(RunStep))
def test_every_field_of_a_step_a_write_changes_is_saved(world, name):
    row, value = change_and_flush(world, lambda txn: txn.steps["check"], name)
    assert getattr(RunStep.objects.get(pk=row.pk), name) == value


# An item is assigned one way only (item_assigned_one_way): a change of assignment clears the others.
COMPANIONS = {
    "assigned_user_id": [("assigned_group_id", None)],
    "assigned_group_id": [],
    "for_operators": [("assigned_group_id", None), ("assigned_user_id", None)],
}


@pytest.mark.parametrize("name", written(WorkItem))
def test_every_field_of_a_work_item_a_write_changes_is_saved(world, name):
    item, value = change_and_flush(world, lambda txn: txn.open_items()[0], name, also=COMPANIONS.get(name, ()))
    assert getattr(WorkItem.objects.get(pk=item.pk), name) == value


def test_every_field_of_a_new_lease_is_written(world):
    run = Run.objects.get(pk=world["run"])
    step = RunStep.objects.get(run=run, step_id="check")
    lease = Lease(public_id=rid()[:32], run=run, step=step, holder="a_1",
                  issued_at=timezone.now(), expires_at=timezone.now() + dt.timedelta(minutes=5))
    with transaction.atomic(), sql.deferred():
        sql.insert(lease)
    assert lease.pk is not None
    assert_saved(lease)


def test_what_a_write_saves_is_every_concrete_field_but_the_key():
    for model in (Run, RunStep, WorkItem, Lease):
        assert tracked.written_fields(model) == tuple(written(model))


def test_an_instance_with_a_deferred_field_is_remembered_through_its_attributes(world):
    # Values are read from the instance's __dict__; a field left out of the query is not there, and is
    # read (and so loaded) through the model as the ORM reads it.
    run = Run.objects.only("id", "state").get(pk=Run.objects.values_list("pk", flat=True).first())
    tracked.remember(run)
    assert tracked.changes(run) == {}
    run.seq += 1
    assert tracked.changes(run) == {"seq": run.seq}
    # What is found is not remembered as saved: asked again, the change is still there, until remembered.
    assert tracked.changes(run) == {"seq": run.seq}
    assert tracked.changes(tracked.remember(run)) == {}


def test_a_change_is_found_whatever_field_it_is_in_and_values_remembered_short_are_refused():
    # changes() looks only at the fields whose value is not the very object loaded: every field of a
    # run, compared by identity or by value, must still be found when it alone moved.
    run = Run(id=1, organization_id=2, version_id=3, process_name="p", state="active", data={"a": 1})
    names = tracked.written_fields(Run)
    for name in names:
        tracked.remember(run, by_identity=frozenset({"data"}))
        before = getattr(run, name)
        run.__dict__[name] = {"moved": name} if name == "data" else object()
        assert tracked.changes(run) == {name: run.__dict__[name]}
        run.__dict__[name] = before
    tracked.remember(run)
    run.data["a"] = 2  # changed in place: found by value where not compared by identity
    assert tracked.changes(run) == {"data": {"a": 2}}
    tracked.remember_as(run, tuple(getattr(run, name) for name in names)[:-1], by_identity=frozenset({"data"}))
    with pytest.raises(ValueError, match="values remembered for"):
        tracked.changes(run)
