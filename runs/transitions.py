"""Every state of a run, a step and a work item, and every change between them, declared here (spec §3.5).

A model's `state` is a StateField: read like any field, but once an instance holds a state it changes
only through `move`, which allows exactly the changes its table lists. Assigning it directly, or any
change a table does not list, raises IllegalTransition: a bug, never an answer to a caller. The tables
are plain data, read by tests without a database.
"""

from __future__ import annotations

from django.db import models
from django.db.models.query_utils import DeferredAttribute


class IllegalTransition(Exception):
    """A bug: a state change that the transition table does not allow, or one made around `move`."""


class RunState(models.TextChoices):
    ACTIVE = "active"
    WAITING = "waiting"
    ENDED = "ended"
    CANCELLED = "cancelled"


class StepState(models.TextChoices):
    READY = "ready"
    CLAIMED = "claimed"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class WorkItemState(models.TextChoices):
    OPEN = "open"
    DECIDED = "decided"
    REMOVED = "removed"


# A run is active while a step is ready or claimed, else waiting, until it ends or is cancelled.
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunState.ACTIVE: frozenset({RunState.ACTIVE, RunState.WAITING, RunState.ENDED, RunState.CANCELLED}),
    RunState.WAITING: frozenset({RunState.ACTIVE, RunState.WAITING, RunState.ENDED, RunState.CANCELLED}),
    RunState.ENDED: frozenset(),
    RunState.CANCELLED: frozenset(),
}

# None is "not currently reached" (spec §3.5).
STEP_TRANSITIONS: dict[str | None, frozenset[str | None]] = {
    None: frozenset({StepState.READY, StepState.WAITING, StepState.DONE, StepState.FAILED}),
    StepState.READY: frozenset({StepState.CLAIMED, StepState.CANCELLED}),
    StepState.CLAIMED: frozenset({StepState.READY, StepState.DONE, StepState.WAITING, StepState.CANCELLED}),
    StepState.WAITING: frozenset(
        {StepState.DONE, StepState.READY, StepState.FAILED, StepState.CANCELLED, StepState.WAITING}
    ),
    StepState.DONE: frozenset({None, StepState.READY, StepState.WAITING, StepState.DONE, StepState.FAILED}),
    StepState.FAILED: frozenset(),
    StepState.CANCELLED: frozenset(),
}

# An item is decided once, or removed when its step moves on without it.
ITEM_TRANSITIONS: dict[str, frozenset[str]] = {
    WorkItemState.OPEN: frozenset({WorkItemState.DECIDED, WorkItemState.REMOVED}),
    WorkItemState.DECIDED: frozenset(),
    WorkItemState.REMOVED: frozenset(),
}


class GuardedState(DeferredAttribute):
    """A state read as a field is; set once as the instance is made or loaded, then only by `move`."""

    def __init__(self, field):
        super().__init__(field)
        self.attname = field.attname

    def __get__(self, instance, cls=None):
        # The value kept under the attname, as DeferredAttribute reads it, without its steps: a write
        # reads each step's state several times.
        if instance is not None:
            try:
                return instance.__dict__[self.attname]
            except KeyError:
                pass
        return super().__get__(instance, cls)

    def __set__(self, instance, value):
        attname = self.attname
        if attname in instance.__dict__:
            raise IllegalTransition(
                f"{type(instance).__name__}.{attname} is changed through runs.transitions.move, not assigned"
            )
        instance.__dict__[attname] = value


class StateField(models.CharField):
    """A CharField whose value a transition table guards (GuardedState)."""

    descriptor_class = GuardedState

    def deconstruct(self):
        # The column is a plain CharField's: migrations need know nothing of the guard.
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.CharField", args, kwargs


class Stateful(models.Model):
    """A model with a guarded `state`: reloading it from the database takes the stored state anew."""

    class Meta:
        abstract = True

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        if fields is None or "state" in fields:
            self.__dict__.pop("state", None)
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)


# Each stateful model's table, by the model's label.
TABLES = {"runs.Run": RUN_TRANSITIONS, "runs.RunStep": STEP_TRANSITIONS, "runs.WorkItem": ITEM_TRANSITIONS}


def allowed(obj, state) -> bool:
    """Whether `obj` may move to `state` from the state it holds (the UI asks before offering a change)."""
    return state in TABLES[type(obj)._meta.label][obj.state]


def move(obj, state) -> None:
    """Change `obj`'s state through its table; anything the table does not list is a bug."""
    if not allowed(obj, state):
        raise IllegalTransition(f"{type(obj).__name__} {getattr(obj, 'step_id', obj.pk)}: {obj.state} → {state}")
    obj.__dict__["state"] = state
