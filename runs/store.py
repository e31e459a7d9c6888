"""A run under its lock, loaded and saved: the rows of one write, and nothing of what they mean.

`load` locks a run row and reads its steps in one round trip; `save` writes back every field a write
changed (base.sql compares each row with its values as loaded) and says what it saved (`Saved`). The
engine decides what changes, and `runs.effects` records what the write owes beyond its rows; this
module only moves rows.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import deque
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from base import keys, sql, tracked
from processes.definition import Definition, definition_for
from processes.kinds import PERSON_KINDS
from processes.models import ProcessVersion

from . import snapshots
from .models import RUN_REPLACED, Event, Lease, Run, RunStep, StepState, WorkItem, WorkItemState


@dataclass
class LoadedRun:
    """One run loaded under its lock, with everything a write may change."""

    run: Run
    definition: Definition
    steps: dict[str, RunStep]
    now: dt.datetime
    queue: deque = field(default_factory=deque)
    new_leases: list[Lease] = field(default_factory=list)
    _items: list | None = None
    new_items: list = field(default_factory=list)
    notices: list[tuple[str, int]] = field(default_factory=list)
    discard_events: bool = False
    also: list = field(default_factory=list)
    consumed: list[Event] = field(default_factory=list)
    lease_keys: list[int] = field(default_factory=list)  # reserved for new leases (load_for_write)
    passages: list = field(default_factory=list)  # the ways out of steps this write took (runs.passages)
    loaded_data: dict | None = None  # the run's data as loaded: its search document changes only with it
    actor: int | None = None  # the person whose request this write is, who is not told of its effects
    known_leases: list = field(default_factory=list)  # the leases the write read (a token's)
    read_as: dict = field(default_factory=dict)  # what the run's guard compares (runs.snapshots.read_as)

    def step(self, step_id: str) -> RunStep:
        return self.steps[step_id]

    def open_items(self) -> list:
        if self._items is None:
            self._items = [tracked.remember(item) for item in WorkItem.objects.filter(run=self.run, state=WorkItemState.OPEN)]
        return self._items

    def holds_no_items(self) -> None:
        """Say that this run has no open work item (a new run, or no step that could hold one), sparing the query."""
        self._items = []

    def loaded_items(self) -> list:
        """The work items this write read (and so may have changed); none when it read none."""
        return [item for item in (self._items or []) if item.pk is not None]

    def next_seq(self) -> int:
        self.run.seq += 1
        return self.run.seq


def may_have_items(steps) -> bool:
    """Whether any step as loaded could hold an open work item: a waiting person step or an escalation."""
    return any(
        row.state == StepState.WAITING and (row.kind in PERSON_KINDS or row.escalation) for row in steps
    )


_versions: dict[int, ProcessVersion] = {}


def published_version(version_id: int) -> ProcessVersion:
    """A published version by id; versions never change, so each process keeps the ones it has read."""
    version = _versions.get(version_id)
    if version is None:
        version = ProcessVersion.objects.get(pk=version_id)
        if len(_versions) > 4096:
            _versions.clear()
        _versions[version_id] = version
    return version


# A run's organization, checked on the row its key finds. `+ 0` keeps the indexes that lead with the
# organization out of the plan: one made from a small table's statistics (or kept by a prepared
# statement as the table grows) may otherwise find the key by reading every run of the organization.
IN_ORGANIZATION = " AND t.organization_id + 0 = %s"


def load(
    run_id: int | None,
    *,
    organization=None,
    lease_id: str | None = None,
    now: dt.datetime | None = None,
    also=(),
    leases: int = 0,
) -> LoadedRun:
    """Lock the run row and load its steps; needs an open transaction.

    The run is named by its key, or by the public id of a lease on it (`run_id` None). `also` holds
    more `sql.select_many` queries to run right after the lock, in the same round trip; their rows
    are on `txn.also`. `leases` keys for new leases come in the same round trip too (PostgreSQL).
    """
    # Plain SQL on the hottest path of every write: the same rows, without building the query each time.
    if lease_id is not None:
        run_key, params = f"(SELECT run_id FROM {Lease._meta.db_table} WHERE public_id = %s)", [lease_id]
    else:
        run_key, params = "%s", [run_id]
    where, step_params = f"t.id = {run_key}", list(params)
    if organization is not None:
        where += IN_ORGANIZATION
        params.append(organization.id)
    remembered = snapshots.recall(
        run_id, lease_id=lease_id, organization_id=organization.id if organization is not None else None,
        also=also, leases=leases,
    ) if sql.is_optimistic() else None
    if remembered is not None:
        # This process's last write to the run left these rows, remembered as loaded; its guard finds
        # out if any moved since.
        locked, rows, extra, lease_keys = remembered
    else:
        # Under base.sql.optimistic the run is not locked: its save is applied only if its revision is unchanged.
        lock = "FOR UPDATE" if connection.features.has_select_for_update and not sql.is_optimistic() else ""
        reserve = keys.next_ids(Lease, leases) if leases else None
        found, rows, *extra = sql.select_many(
            [(Run, where, params, lock), (RunStep, f"t.run_id = {run_key}", step_params, ""), *also],
            raw=[reserve] if reserve else [],
        )
        lease_keys = [key for (key,) in extra.pop()] if reserve else []
        if not found:
            raise Run.DoesNotExist(f"run {run_id}")
        locked = found[0]
        # As loaded, to write back only what changes. `data` is only ever replaced, never changed in
        # place (`_store`, `_show_check`), so keeping the loaded object itself is enough.
        tracked.remember(locked, by_identity=RUN_REPLACED)
        rows = [tracked.remember(row) for row in rows]
    read_as = snapshots.read_as(locked)
    # Without the lock, an answer given without a guarded save checks the run still is as read.
    sql.expect(Run, locked.id, read_as)
    locked.version = published_version(locked.version_id)
    txn = LoadedRun(
        run=locked,
        definition=definition_for(locked.version),
        steps={row.step_id: row for row in rows},
        now=now or timezone.now(),
        also=extra,
        lease_keys=lease_keys,
        loaded_data=locked.data,
        known_leases=[obj for found_rows in extra for obj in found_rows if isinstance(obj, Lease)],
        read_as=read_as,
    )
    if not may_have_items(txn.steps.values()):
        txn.holds_no_items()
    return txn


@dataclass(frozen=True)
class Saved:
    """What a save did that its effects depend on: a run started or ended, work items closed."""

    started: bool
    ended: bool
    closed: list


def save(txn: LoadedRun) -> Saved:
    """Write every row the write changed, in the write's batch, and say what was saved."""
    run = txn.run
    started = run._state.adding
    if started:
        # A new run is inserted once, already in its first state; with its key reserved, in the batch.
        (sql.insert_later if run.id is not None else sql.insert)(run)
        ended = run.is_over
    else:
        # Every save moves the revision, so a write that read the run before this one sees it moved.
        run.revision += 1
        changes = tracked.changes(run)
        sql.guard(Run, run.id, changes, txn.read_as)
        ended = run.is_over and "state" in changes
    new_rows = [row for row in txn.steps.values() if row.id is None]
    if new_rows and sql.is_optimistic() and snapshots.enabled():
        # Keys ahead for a new run's steps, so that its snapshot names each one (runs.snapshots).
        for row, key in zip(new_rows, snapshots.keys_ahead(RunStep, len(new_rows)), strict=True):
            row.pk = key
    for lease, key in zip(txn.new_leases, txn.lease_keys, strict=False):
        lease.pk = key  # reserved with the load, as a rule
    unkeyed = [lease for lease in txn.new_leases if lease.id is None]
    # Rows others point at need their keys before the batch: work items at their steps, steps at their
    # leases. The keys come from the sequences, in one round trip, and every row joins the batch.
    # (A new run's steps keyed ahead for its snapshot have theirs.)
    unkeyed_steps = [row for row in new_rows if row.id is None]
    needing = [rows for rows in (unkeyed_steps if txn.new_items else [], txn.new_items, unkeyed) if rows]
    if needing and not keys.reserve_keys(needing):  # SQLite: the INSERTs give the keys
        if txn.new_items:
            sql.insert(*unkeyed_steps)
            WorkItem.objects.bulk_create(txn.new_items)
        sql.insert(*unkeyed)
    sql.insert_later(*[row for row in (*new_rows, *txn.new_items, *txn.new_leases) if row._state.adding])
    for lease in txn.new_leases:
        if lease.step.lease is lease:
            lease.step.lease_id = lease.id
    added = {id(row) for row in new_rows}  # by identity: a model's == compares keys, through Python
    for row in txn.steps.values():
        if id(row) in added:
            tracked.remember(row)
            continue
        # One narrow UPDATE per changed row: cheaper than a CASE-per-field bulk update for the few rows a write changes.
        sql.update(RunStep, row.id, tracked.changes(row))
    for item in txn.new_items:
        tracked.remember(item)
    closed = []
    for item in txn.loaded_items():
        changes = tracked.changes(item)
        if "state" in changes and item.state != WorkItemState.OPEN:
            closed.append(item)
        sql.update(WorkItem, item.pk, changes)
    for event in txn.consumed:
        if event.pk is None:
            sql.insert_later(event)  # sent and consumed in this write
        else:
            sql.update(Event, event.pk, tracked.changes(event))
    if txn.discard_events:
        Event.objects.filter(run=run, consumed_by__isnull=True, discarded=False).update(discarded=True)
    if snapshots.enabled():
        # Once applied, the rows as this write leaves them answer the run's next write here (runs.snapshots).
        sql.on_commit(functools.partial(snapshots.remember, txn))
    return Saved(started=started, ended=ended, closed=closed)
