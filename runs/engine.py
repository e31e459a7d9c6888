"""Every transition of a run, its steps and its work items, in one place (spec §3, §6).

A write opens one transaction (in runs.tools), locks the run row with `load_for_write`, applies
whatever time has made due, performs its change through the functions below, and calls `flush`.
Everything a change triggers (a next step, a wait already past, a held event, a join, a finish)
is applied before `flush` returns, so the run view a write returns is already complete.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import deque
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.identity import Identity
from accounts.models import User
from base import sql
from processes.definition import JOIN, Definition, StepDef, definition_for, duration_seconds
from processes.models import ProcessVersion, RoleBinding
from processes.validation import STEP_ID_PATTERN

from . import evaluation, leases, notices
from .acceptance import FILE_CHANGED, FILE_NOT_FOUND, check_fields, check_submission, parse_datetime
from .assignments import may_decide
from .canonical import data_size, snapshot_of
from .errors import Conflict, Forbidden, Invalid, NotAccepted, NotFound, Retry, Stale
from .models import (
    ACTIVE_STATES,
    Event,
    Lease,
    Run,
    RunState,
    RunStep,
    StepState,
    Upload,
    WorkItem,
    WorkItemState,
    public_pk,
)
from .transitions import move

SERVER = "server"

def iso(moment: dt.datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class LoadedRun:
    """One run loaded under its lock, with everything a write may change."""

    run: Run
    definition: Definition
    steps: dict[str, RunStep]
    now: dt.datetime
    dirty: set[str] = field(default_factory=set)
    queue: deque = field(default_factory=deque)
    new_leases: list[Lease] = field(default_factory=list)
    _items: list | None = None
    new_items: list = field(default_factory=list)
    notices: list[tuple[str, int]] = field(default_factory=list)
    discard_events: bool = False
    also: list = field(default_factory=list)
    consumed: list[Event] = field(default_factory=list)
    lease_keys: list[int] = field(default_factory=list)  # reserved for new leases (load_for_write)

    def step(self, step_id: str) -> RunStep:
        return self.steps[step_id]

    def open_items(self) -> list:
        if self._items is None:
            self._items = [sql.remember(item) for item in WorkItem.objects.filter(run=self.run, state=WorkItemState.OPEN)]
        return self._items

    def loaded_items(self) -> list:
        """The work items this write read (and so may have changed); none when it read none."""
        return [item for item in (self._items or []) if item.pk is not None]


    def touch(self, row: RunStep) -> None:
        self.dirty.add(row.step_id)

    def next_seq(self) -> int:
        self.run.seq += 1
        return self.run.seq


def may_have_items(steps) -> bool:
    """Whether any step as loaded could hold an open work item: a waiting person step or an escalation."""
    return any(
        row.state == StepState.WAITING and (row.kind in ("task", "approve") or row.escalation) for row in steps
    )


def set_state(txn: LoadedRun, row: RunStep, state: str | None) -> None:
    """Change a step's state through its transition table (runs.transitions); anything else is a bug."""
    move(row, state)
    txn.touch(row)


# --- loading and saving -------------------------------------------------------------------------


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
# organization out of the plan: one made while the table was small may otherwise find the key by reading
# every run of the organization, and a prepared statement keeps its plan as the table grows.
IN_ORGANIZATION = " AND t.organization_id + 0 = %s"


def load_for_write(
    run_id: int | None,
    *,
    organization=None,
    lease_id: str | None = None,
    now: dt.datetime | None = None,
    also=(),
    leases: int = 0,
) -> LoadedRun:
    """Lock the run row, load its steps and apply what time has made due; needs an open transaction.

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
        params.append(organization.pk)
    lock = "FOR UPDATE" if connection.features.has_select_for_update else ""
    reserve = sql.next_ids(Lease, leases) if leases else None
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
    sql.remember(locked, by_identity=RUN_REPLACED)
    locked.version = published_version(locked.version_id)
    txn = LoadedRun(
        run=locked,
        definition=definition_for(locked.version),
        steps={row.step_id: sql.remember(row) for row in rows},
        now=now or timezone.now(),
        also=extra,
        lease_keys=lease_keys,
    )
    if not may_have_items(txn.steps.values()):
        txn._items = []  # nothing to load: spare the query
    if not locked.is_over:
        apply_time(txn)
    return txn


def flush(txn: LoadedRun) -> None:
    """Save everything the write changed and schedule its side effects for after the commit."""
    run = txn.run
    if not run.is_over:
        move(run, derive_run_state(txn))
    run.wake_at = None if run.is_over else next_wake(txn)
    run.updated_at = txn.now
    if run._state.adding:
        # A new run is inserted once, already in its first state; with its key reserved, in the batch.
        (sql.insert_later if run.pk is not None else sql.insert)(run)
    else:
        sql.update(Run, run.pk, sql.changes(run))
    new_rows = [row for row in txn.steps.values() if row.pk is None]
    if new_rows:
        # Work items point at their steps, so only then must the steps' keys come back first.
        (sql.insert if txn.new_items else sql.insert_later)(*new_rows)
    if txn.new_leases:
        if len(txn.lease_keys) >= len(txn.new_leases):
            for lease, key in zip(txn.new_leases, txn.lease_keys[: len(txn.new_leases)], strict=True):
                lease.pk = key
            sql.insert_later(*txn.new_leases)
        else:
            sql.insert(*txn.new_leases)
        for lease in txn.new_leases:
            if lease.step.lease is lease:
                lease.step.lease_id = lease.pk
    for row in txn.steps.values():
        if row in new_rows:
            sql.remember(row)
            continue
        # One narrow UPDATE per changed row: cheaper than a CASE-per-field bulk update for the few rows a write changes.
        sql.update(RunStep, row.pk, sql.changes(row))
    if txn.new_items:
        WorkItem.objects.bulk_create(txn.new_items)
        for item in txn.new_items:
            sql.remember(item)
    for item in txn.loaded_items():
        sql.update(WorkItem, item.pk, sql.changes(item))
    for event in txn.consumed:
        if event.pk is None:
            sql.insert_later(event)  # sent and consumed in this write
        else:
            sql.update(Event, event.pk, sql.changes(event))
    if txn.discard_events:
        Event.objects.filter(run=run, consumed_by__isnull=True, discarded=False).update(discarded=True)
    if txn.notices:
        for step_id, _attempt in txn.notices:
            notices.record_overdue(run=run, row=txn.steps[step_id], step=txn.definition[step_id], now=txn.now)
        transaction.on_commit(_after_commit(run.pk))


def _after_commit(run_id: int):
    def send():
        notices.send_pending_email(run_id=run_id)

    return send


# A run's data is a document a write only ever replaces (`_store`, `_show_check`), never alters in place:
# compared by identity, it need not be copied at every load.
RUN_REPLACED = frozenset({"data"})


def derive_run_state(txn: LoadedRun) -> str:
    """`active` while any step is ready or claimed, else `waiting` (spec §3.5)."""
    if any(row.state in (StepState.READY, StepState.CLAIMED) for row in txn.steps.values()):
        return RunState.ACTIVE
    return RunState.WAITING


def next_wake(txn: LoadedRun) -> dt.datetime | None:
    moments = []
    for row in txn.steps.values():
        if row.state == StepState.CLAIMED and row.lease_expires_at:
            moments.append(row.lease_expires_at)
        if row.state == StepState.WAITING and row.wake_at:
            moments.append(row.wake_at)
        if row.state in ACTIVE_STATES and row.due_at and not row.overdue:
            moments.append(row.due_at)
    return min(moments) if moments else None


# --- time ---------------------------------------------------------------------------------------


def apply_time(txn: LoadedRun) -> None:
    """Apply every ended lease, passed wait, timeout and deadline up to `txn.now`."""
    now = txn.now
    for row in list(txn.steps.values()):
        if txn.run.is_over:
            return
        if row.state == StepState.CLAIMED and row.lease_expires_at and row.lease_expires_at <= now:
            _expire_lease(txn, row)
        if row.state == StepState.WAITING and row.wake_at and row.wake_at <= now:
            _wake(txn, row)
        if row.state in ACTIVE_STATES and row.due_at and row.due_at <= now and not row.overdue:
            row.overdue = True
            if not row.overdue_noticed:
                row.overdue_noticed = True
                txn.notices.append((row.step_id, row.attempt))
            txn.touch(row)
    drain(txn)


def _expire_lease(txn: LoadedRun, row: RunStep) -> None:
    set_state(txn, row, StepState.READY)
    if row.progress:
        row.handoff = {**(row.handoff or {}), "progress": row.progress}
        row.progress = None  # handed off once; the next lease starts with no note of its own
    _clear_claim(row)


def _clear_claim(row: RunStep) -> None:
    row.lease = None
    row.lease_expires_at = None
    row.claimed_by = None


def _wake(txn: LoadedRun, row: RunStep) -> None:
    step = txn.definition[row.step_id]
    row.wake_at = None
    if step.kind == "wait_for":
        complete(txn, row, {"by": SERVER, "at": iso(txn.now)}, step.on_timeout)
    else:
        complete(txn, row, {"by": SERVER, "at": iso(txn.now)}, step.next)


# --- reaching steps -------------------------------------------------------------------------------


def reach(txn: LoadedRun, step_id: str) -> None:
    """Make a step ready (or waiting); the work is done in `drain`, so chains never recurse."""
    txn.queue.append(step_id)


def drain(txn: LoadedRun) -> None:
    while txn.queue and not txn.run.is_over:
        _arrive(txn, txn.queue.popleft())


def _arrive(txn: LoadedRun, step_id: str) -> None:
    step = txn.definition[step_id]
    row = txn.steps[step_id]
    now = txn.now
    row.ready_seq = txn.next_seq()
    row.went_to = None
    row.wake_at = None
    txn.touch(row)
    if step.kind == "finish":
        set_state(txn, row, StepState.DONE)
        row.done_seq = row.ready_seq
        end_run(txn, state=RunState.ENDED, outcome=step.value, by=SERVER, note=None)
        return
    if step.kind in ("agent", "task", "approve"):
        row.attempt += 1
        row.ready_since = now
        row.handoff = None
        row.progress = None
        row.escalation = None
        row.overdue = False
        row.overdue_noticed = False
        row.due_at = now + dt.timedelta(seconds=step.due_seconds) if step.due_seconds else None
    if step.kind == "agent":
        set_state(txn, row, StepState.READY)
    elif step.is_person:
        set_state(txn, row, StepState.WAITING)
        _open_person_item(txn, step, row)
    elif step.kind == "wait":
        set_state(txn, row, StepState.WAITING)
        row.wake_at = now + dt.timedelta(seconds=parse_wait(step.value))
    elif step.kind == "wait_until":
        value = read_path(txn.run.data, step.value)
        moment = parse_datetime(value)
        if moment is None:
            shown = "missing" if value is None else "not a datetime"
            fail_by_server(txn, row, f"{step.value} is {shown}; wait_until needs an RFC 3339 datetime.")
            return
        set_state(txn, row, StepState.WAITING)
        if moment <= now:
            complete(txn, row, {"by": SERVER, "at": iso(now)}, step.next)
        else:
            row.wake_at = moment
    elif step.kind == "wait_for":
        set_state(txn, row, StepState.WAITING)
        held = None if not txn.run.holds_events else (
            Event.objects.filter(run=txn.run, name=step.value, consumed_by__isnull=True, discarded=False)
            .exclude(pk__in=[e.pk for e in txn.consumed if e.pk is not None])
            .order_by("sent_at", "id")
            .first()
        )
        if held is not None:
            consume_event(txn, row, held)
        elif step.timeout_seconds:
            row.wake_at = now + dt.timedelta(seconds=step.timeout_seconds)
    elif step.kind == "parallel":
        set_state(txn, row, StepState.WAITING)
        for entry in step.entries:
            reach(txn, entry)


def parse_wait(value: str) -> int:
    return duration_seconds(value) or 0


def read_path(data: dict, path: str):
    """Read `inputs.<f>` or `steps.<id>.output.<f>` from run data; None when absent."""
    parts = path.split(".")
    if parts[0] == "inputs" and len(parts) == 2:
        return data.get("inputs", {}).get(parts[1])
    if parts[0] == "steps" and len(parts) == 4 and parts[2] == "output":
        return ((data.get("steps", {}).get(parts[1]) or {}).get("output") or {}).get(parts[3])
    return None


def _bindings(txn: LoadedRun) -> dict[str, int]:
    cache = getattr(txn.run.version, "_bindings", None)
    if cache is None:
        cache = dict(RoleBinding.objects.filter(version=txn.run.version).values_list("role", "group_id"))
        txn.run.version._bindings = cache
    return cache


def _open_person_item(txn: LoadedRun, step: StepDef, row: RunStep) -> None:
    item = WorkItem(organization_id=txn.run.organization_id, run=txn.run, step=row, kind=step.kind, created_at=txn.now)
    item._row = row
    person = step.person
    if person == "initiator":
        user = txn.run.initiator
        if user is None:
            fail_by_server(txn, row, "The run has no initiator to assign this step to.")
            return
        item.assigned_user = user
        item.assigned_person = user.email
    elif "." in person:
        value = read_path(txn.run.data, person)
        user = None
        if isinstance(value, str):
            user = User.objects.filter(
                email__iexact=value, membership__organization_id=txn.run.organization_id
            ).first()
        if user is None:
            shown = "missing" if value is None else f"'{value}', which is no member of this organization"
            fail_by_server(txn, row, f"person {person} is {shown}.")
            return
        item.assigned_user = user
        item.assigned_person = value
    else:
        item.assigned_group_id = _bindings(txn)[person]
    txn.new_items.append(item)
    txn.open_items().append(item)


def open_escalation_item(txn: LoadedRun, row: RunStep, escalation: dict) -> None:
    item = WorkItem(
        organization_id=txn.run.organization_id,
        run=txn.run,
        step=row,
        kind="agent",
        for_operators=True,
        escalation=escalation,
        created_at=txn.now,
    )
    item._row = row
    txn.new_items.append(item)
    txn.open_items().append(item)


def consume_event(txn: LoadedRun, row: RunStep, event: Event) -> None:
    event.consumed_by = row.step_id
    event.consumed_at = txn.now
    txn.consumed.append(event)
    step = txn.definition[row.step_id]
    complete(txn, row, {"output": event.data or {}, "by": event.sent_by, "at": iso(txn.now)}, step.next)


# --- completing, rejecting, ending ----------------------------------------------------------------


def with_record(data: dict, step_id: str, record: dict | None) -> dict:
    """Return run data in which `record` is the step's current value and the earlier one is history."""
    steps = dict(data.get("steps", {}))
    current = steps.get(step_id) or {}
    history = list(current.get("history", []))
    previous = {k: v for k, v in current.items() if k != "history"}
    if previous:
        history.append(previous)
    steps[step_id] = {**(record or {}), "history": history}
    return {**data, "steps": steps}


def _store(txn: LoadedRun, step_id: str, record: dict | None) -> None:
    txn.run.data = with_record(txn.run.data, step_id, record)


def complete(txn: LoadedRun, row: RunStep, record: dict | None, target: str | None) -> None:
    """Complete a step with `record` (None records nothing) and move on to `target`."""
    step = txn.definition[row.step_id]
    if record is not None:
        _store(txn, row.step_id, record)
    set_state(txn, row, StepState.DONE)
    row.done_seq = txn.next_seq()
    row.went_to = target
    row.wake_at = None
    row.progress = None
    _clear_claim(row)
    _close_items(txn, row)
    if target == JOIN:
        _maybe_join(txn, step.branch)
    elif target:
        reach(txn, target)


def _close_items(txn: LoadedRun, row: RunStep, decision: str | None = None, by: str | None = None) -> None:
    for item in txn.open_items():
        if item_step(txn, item) is row and item.state == WorkItemState.OPEN:
            move(item, WorkItemState.DECIDED if decision else WorkItemState.REMOVED)
            item.decision = decision
            item.decided_by = by
            item.decided_at = txn.now
            if item.pk is None and item in txn.new_items:
                txn.new_items.remove(item)


def item_step(txn: LoadedRun, item) -> RunStep:
    """Return the loaded step row a work item belongs to, without a query."""
    row = getattr(item, "_row", None)
    if row is None:
        row = next(r for r in txn.steps.values() if r.pk == item.step_id)
        item._row = row
    return row


def _maybe_join(txn: LoadedRun, parallel_id: str) -> None:
    """Complete the parallel step when every branch has reached `join` (parallel-1 §3)."""
    parallel = txn.steps[parallel_id]
    step = txn.definition[parallel_id]
    joined = {
        txn.definition[row.step_id].branch_entry
        for row in txn.steps.values()
        if txn.definition[row.step_id].branch == parallel_id
        and row.state == StepState.DONE
        and row.went_to == JOIN
        and row.done_seq > parallel.ready_seq
    }
    if joined >= set(step.entries):
        complete(txn, parallel, None, step.next)


def reject(txn: LoadedRun, row: RunStep, *, note: str, by: str) -> None:
    """Record a rejection and return to `on_reject`, or end the run `rejected` (spec §3.1, §3.2)."""
    step = txn.definition[row.step_id]
    _store(txn, row.step_id, {"decision": "rejected", "note": note, "by": by, "at": iso(txn.now)})
    set_state(txn, row, StepState.DONE)
    row.done_seq = txn.next_seq()
    row.went_to = step.on_reject
    _close_items(txn, row)
    if not step.on_reject:
        end_run(txn, state=RunState.ENDED, outcome="rejected", by=by, note=note)
        return
    rewind(txn, target=step.on_reject, rejecting=row.step_id)
    reach(txn, step.on_reject)


def rewind(txn: LoadedRun, *, target: str, rejecting: str) -> None:
    """Move every completion made since `target` was reached into history (spec §3.1, parallel-1 §3)."""
    target_row = txn.steps[target]
    target_def = txn.definition[target]
    if target_row.ready_seq == 0:
        return
    for row in txn.steps.values():
        if row.step_id in (target, rejecting):
            continue
        step = txn.definition[row.step_id]
        if target_def.branch and step.branch_entry != target_def.branch_entry:
            continue
        if row.state == StepState.DONE and row.done_seq > target_row.ready_seq:
            if row.step_id in txn.run.data.get("steps", {}):
                _store(txn, row.step_id, None)
            set_state(txn, row, None)
            row.went_to = None


def fail_step(txn: LoadedRun, row: RunStep, *, note: str, by: str) -> None:
    """Record a `failed` decision on the step and end the run `failed` (spec §3.4, §3.5)."""
    _store(txn, row.step_id, {"decision": "failed", "note": note, "by": by, "at": iso(txn.now)})
    set_state(txn, row, StepState.FAILED)
    _clear_claim(row)
    end_run(txn, state=RunState.ENDED, outcome="failed", by=by, note=note)


def fail_by_server(txn: LoadedRun, row: RunStep, note: str) -> None:
    fail_step(txn, row, note=note, by=SERVER)


def end_run(txn: LoadedRun, *, state: str, outcome: str | None, by: str, note: str | None) -> None:
    """End or cancel the run: every unfinished step cancelled, open items removed, tokens dead."""
    run = txn.run
    move(run, state)
    run.outcome = outcome
    run.ended = {"by": by, "at": iso(txn.now), "note": note}
    for row in txn.steps.values():
        if row.state in ACTIVE_STATES:
            set_state(txn, row, StepState.CANCELLED)
            _clear_claim(row)
            row.wake_at = None
    for row in txn.steps.values():
        _close_items(txn, row)
    txn.discard_events = run.holds_events
    txn.queue.clear()


# --- the writes -----------------------------------------------------------------------------------


def new_run(
    *, identity: Identity, version, inputs: dict, mode: str, now: dt.datetime | None = None
) -> LoadedRun:
    """Create a run of `version` and make its first step ready; refuse inputs the process does not take."""
    now = now or timezone.now()
    definition = definition_for(version)
    if identity.is_agent and definition.uses_initiator():
        raise Invalid(
            "This process assigns a step to its initiator, and an agent cannot be one.",
            ["process: has a step assigned to initiator; start it as a person"],
        )
    issues = check_fields(definition.inputs, inputs, "inputs")
    size = data_size({"inputs": inputs, "steps": {}})
    if size > settings.RUN_DATA_BYTES:
        issues.append(f"inputs: {size} bytes exceed limits.runDataBytes ({settings.RUN_DATA_BYTES})")
    if issues:
        raise Invalid("The inputs do not fit the process.", issues)
    run = Run(
        organization=identity.organization,
        version=version,
        process_name=version.frontmatter["name"],
        mode=mode,
        started_by=identity.ref,
        initiator=identity.user if identity.is_human else None,
        data={"inputs": inputs, "steps": {}},
        started_at=now,
        updated_at=now,
    )
    steps = {
        step.id: RunStep(
            run=run, organization_id=run.organization_id, process_name=run.process_name, version=version,
            mode=mode, step_id=step.id, position=step.index, kind=step.kind,
        )
        for step in definition.steps
    }
    txn = LoadedRun(run=run, definition=definition, steps=steps, now=now)
    txn._items = []
    reach(txn, definition.first.id)
    drain(txn)
    return txn


def claim(txn: LoadedRun, *, identity: Identity, step_id: str) -> Lease:
    """Give the caller the ready agent step for one lease (spec §3.3, §6 rule 2)."""
    row = txn.steps.get(step_id)
    if row is None:
        raise NotFound(f"Run {txn.run.public_id} has no step '{step_id}'.")
    if txn.definition[step_id].kind != "agent":
        raise Forbidden(f"Step '{step_id}' is not an agent step; people complete it with decide.")
    if identity.is_human:
        raise Forbidden("Only an agent claims steps; a person decides work items.")
    if row.state == StepState.CLAIMED:
        code = "claimed_by_you" if row.claimed_by == identity.ref else "claimed_by_other"
        raise Conflict(f"Step '{step_id}' is already claimed.", [code])
    if row.state != StepState.READY:
        raise Conflict(f"Step '{step_id}' is not ready.", ["not_ready"])
    lease = _issue_lease(txn, row, identity)
    set_state(txn, row, StepState.CLAIMED)
    return lease


def _issue_lease(txn: LoadedRun, row: RunStep, identity: Identity) -> Lease:
    expires = txn.now + dt.timedelta(seconds=settings.LEASE_SECONDS)
    lease = Lease(
        public_id=leases.new_lease_id(), run=txn.run, step=row, holder=identity.ref, issued_at=txn.now, expires_at=expires
    )
    txn.new_leases.append(lease)
    row.lease = lease
    row.lease_expires_at = expires
    row.claimed_by = identity.ref
    txn.touch(row)
    return lease


def held_step(txn: LoadedRun, lease: Lease, identity: Identity) -> RunStep:
    """Return the step a lease holds, or raise `stale` when the lease ended or was replaced."""
    row = next(r for r in txn.steps.values() if r.pk == lease.step_id)
    if row.state != StepState.CLAIMED or row.lease_id != lease.pk:
        raise Stale("This token's lease has ended or was replaced; call get_work again.")
    if lease.holder != identity.ref:
        raise Forbidden("This token was issued to another caller.")
    return row


def renew(txn: LoadedRun, row: RunStep, *, identity: Identity, progress: str | None) -> Lease:
    if progress is not None:
        row.progress = progress
    return _issue_lease(txn, row, identity)


def verify_files(identity: Identity, evidence: list[dict]) -> tuple[dict[str, str], dict[str, str]]:
    """Verify file evidence in one query: it exists in the organization and its bytes still match (spec §5).

    Return the problem of each bad ref, and the recorded sha256 of each good one.
    """
    refs = {item["ref"] for item in evidence if item["kind"] == "file"}
    if not refs:
        return {}, {}
    found = {u.public_id: u for u in Upload.objects.filter(organization=identity.organization, public_id__in=refs)}
    problems, hashes = {}, {}
    for ref in refs:
        upload = found.get(ref)
        if upload is None:
            problems[ref] = FILE_NOT_FOUND
        elif hashlib.sha256(bytes(upload.content)).hexdigest() != upload.sha256:
            problems[ref] = FILE_CHANGED
        else:
            hashes[ref] = upload.sha256
    return problems, hashes


def recorded_evidence(evidence: list[dict], hashes: dict[str, str]) -> list[dict]:
    """Evidence as run data keeps it: file items carry the hash recorded at upload."""
    return [
        {"kind": "file", "ref": item["ref"], "sha256": hashes[item["ref"]]}
        if item["kind"] == "file"
        else {"kind": item["kind"], "ref": item["ref"]}
        for item in evidence
    ]


def accept(
    txn: LoadedRun,
    row: RunStep,
    *,
    identity: Identity,
    output: dict,
    evidence: list[dict],
    summary: str | None,
    next_step: str | None,
    reason: str | None,
    require_summary: bool,
) -> dict:
    """Check a submission under every rule of spec §6 rule 3; return the record to store, or raise."""
    step = txn.definition[row.step_id]
    problems, hashes = verify_files(identity, evidence)
    issues = check_submission(
        step,
        output=output,
        evidence=evidence,
        summary=summary,
        next_step=next_step,
        reason=reason,
        require_summary=require_summary,
        file_problems=problems,
    )
    record: dict = {"output": output, "evidence": recorded_evidence(evidence, hashes) if not issues else evidence}
    if summary is not None and summary.strip():
        record["summary"] = summary
    if step.routes and next_step is not None:
        record["next"] = next_step
        record["reason"] = reason
    record["by"] = identity.ref
    record["at"] = iso(txn.now)
    if not issues:
        size = data_size(with_record(txn.run.data, row.step_id, record))
        if size > settings.RUN_DATA_BYTES:
            issues.append(f"run data: {size} bytes would exceed limits.runDataBytes ({settings.RUN_DATA_BYTES})")
    if issues:
        raise NotAccepted("The submission was not accepted; nothing changed.", issues)
    return record


def submit(txn: LoadedRun, row: RunStep, *, identity: Identity, record: dict, verdict: dict | None = None) -> None:
    """Complete a step with an accepted record; a check's verdict is recorded with it, or holds it when unsure."""
    step = txn.definition[row.step_id]
    if verdict is not None:
        if verdict["verdict"] == evaluation.UNSURE and not verdict["advisory"]:
            hold_candidate(txn, row, identity=identity, record=record, verdict=verdict)
            return
        record = {**record, "check": verdict}
    complete(txn, row, record, record.get("next") or step.next)
    drain(txn)


def refuse_submission(txn: LoadedRun, row: RunStep, refused: NotAccepted) -> None:
    """Keep a refused submission's issues, and a failed check's verdict, for the next attempt's handoff (spec §3.3)."""
    row.handoff = {**(row.handoff or {}), "issues": refused.issues}
    if isinstance(refused, evaluation.CheckFailed):
        row.handoff["check"] = refused.verdict
    txn.touch(row)


# --- check-1 (profiles/check.md §3) -------------------------------------------------------------


def check_verdict(
    txn: LoadedRun, row: RunStep, *, record: dict, holder: str, answered: evaluation.Answered | None
) -> dict | None:
    """Return the verdict of the step's check on an accepted record (None without a check), or raise."""
    # Without an answer yet, NeedsCheck sends the caller out of the transaction to ask the evaluator
    # with no lock held. An answer given on other material, to another claim or work item (`holder`),
    # or before the run moved on (`seq`) is `retry`. A blocking fail is CheckFailed (not_accepted).
    step = txn.definition[row.step_id]
    if step.check is None:
        return None
    completed = sorted(txn.steps.values(), key=lambda r: r.done_seq)
    request = evaluation.CheckRequest(
        step_id=row.step_id,
        questions=evaluation.questions_of(step.check),
        advisory=step.advisory,
        material=evaluation.material_of(
            instructions=step.instructions,
            body=txn.definition.body,
            data=txn.run.data,
            oldest_first=[r.step_id for r in completed],
            record=record,
        ),
        seq=txn.run.seq,
        holder=holder,
    )
    if answered is None:
        raise evaluation.NeedsCheck(request)
    if answered.request != request:
        raise Retry("The run changed while the check was being answered; send the same call again.")
    verdict = answered.verdict
    if verdict["verdict"] == evaluation.FAIL and not step.advisory:
        raise evaluation.CheckFailed(verdict, evaluation.check_lines(step.check, verdict))
    size = data_size(with_record(txn.run.data, row.step_id, {**record, "check": verdict}))
    if size > settings.RUN_DATA_BYTES:
        raise NotAccepted(
            "The submission was not accepted; nothing changed.",
            [f"run data: {size} bytes would exceed limits.runDataBytes ({settings.RUN_DATA_BYTES})"],
        )
    return verdict


def hold_candidate(txn: LoadedRun, row: RunStep, *, identity: Identity, record: dict, verdict: dict) -> None:
    """Hold an unsure submission as the step's candidate and escalate the step to operators, as `escalate` does."""
    step = txn.definition[row.step_id]
    lines = evaluation.check_lines(step.check, verdict, results=(evaluation.UNSURE, evaluation.FAIL))
    escalation = {
        "note": "\n".join(["The check was unsure; decide on the held submission.", *lines]),
        "by": identity.ref,
        "at": iso(txn.now),
        "check": verdict,
        "candidate": {key: record[key] for key in evaluation.CANDIDATE_FIELDS if key in record},
    }
    covers = _show_check(txn, row.step_id, verdict)
    set_state(txn, row, StepState.WAITING)
    # The row keeps what the work item does not show: the lines for a return, and what to put back.
    row.escalation = {**escalation, "lines": lines, "covers": covers}
    _clear_claim(row)
    open_escalation_item(txn, row, escalation)


def _show_check(txn: LoadedRun, step_id: str, verdict: dict) -> dict:
    """Show a waiting verdict as `steps.<id>.check`, even over an earlier completion; return what it covers."""
    steps = dict(txn.run.data.get("steps", {}))
    entry = steps.get(step_id)
    steps[step_id] = {**(entry or {"history": []}), "check": verdict}
    txn.run.data = {**txn.run.data, "steps": steps}
    return {"absent": entry is None, "check": (entry or {}).get("check")}


def _unshow_check(txn: LoadedRun, row: RunStep) -> None:
    """Put back what a waiting verdict covered in run data, once a person decides the step."""
    covers = row.escalation["covers"]
    steps = dict(txn.run.data.get("steps", {}))
    if covers["absent"]:
        steps.pop(row.step_id, None)
    else:
        entry = {key: value for key, value in steps[row.step_id].items() if key != "check"}
        if covers["check"] is not None:
            entry["check"] = covers["check"]
        steps[row.step_id] = entry
    txn.run.data = {**txn.run.data, "steps": steps}


def escalate(txn: LoadedRun, row: RunStep, *, identity: Identity, note: str) -> None:
    """Hand a claimed agent step to the organization's operators with the agent's note."""
    escalation = {"note": note, "by": identity.ref, "at": iso(txn.now)}
    set_state(txn, row, StepState.WAITING)
    row.escalation = escalation
    _clear_claim(row)
    open_escalation_item(txn, row, escalation)


def return_step(txn: LoadedRun, row: RunStep, *, note: str, by: str) -> None:
    """Send an escalated step back with the note, to agents or a task's assignee; the same attempt and due clock."""
    step = txn.definition[row.step_id]
    row.handoff = {**(row.handoff or {}), "returned": {"note": note, "by": by, "at": iso(txn.now)}}
    held = row.escalation or {}
    if held.get("check"):
        # check-1 §3: the same attempt continues, so the unsure verdict and its lines travel with it.
        row.handoff.update(check=held["check"], issues=held["lines"])
    row.escalation = None
    if step.is_person:
        set_state(txn, row, StepState.WAITING)
        _open_person_item(txn, step, row)
    else:
        set_state(txn, row, StepState.READY)


def cancel(txn: LoadedRun, *, identity: Identity, reason: str) -> None:
    """Cancel the run for an operator of its organization, with the reason they give (spec §3.5)."""
    if not (identity.is_human and identity.is_operator):
        raise Forbidden("Only an operator of this organization may cancel a run.")
    if not reason.strip():
        raise Invalid("A cancel needs a reason.", ["reason: required"])
    end_run(txn, state=RunState.CANCELLED, outcome=None, by=identity.ref, note=reason)


def send_event(txn: LoadedRun, *, identity: Identity, name: str, data) -> str | None:
    """Deliver an event from an agent or an operator to its waiting step, or hold it; return the step's id."""
    if identity.is_human and not identity.is_operator:
        raise Forbidden("Events come from agents and operators.")
    issues = []
    if not STEP_ID_PATTERN.match(name):
        issues.append("name: must match ^[a-z][a-z0-9_-]{0,63}$")
    if data is not None and data_size(data) > settings.RUN_DATA_BYTES:
        issues.append(f"data: exceeds limits.runDataBytes ({settings.RUN_DATA_BYTES})")
    if issues:
        raise Invalid("The event cannot be held.", issues)
    event = Event(run=txn.run, name=name, data=data, sent_by=identity.ref, sent_at=txn.now)
    consumed_by = deliver_event(txn, event)
    if consumed_by is None:
        txn.run.holds_events = True
        sql.insert_later(event)  # held for a later wait_for; a consumed one is saved by the flush
    return consumed_by


def deliver_event(txn: LoadedRun, event: Event) -> str | None:
    """Deliver an event to the earliest waiting `wait_for` of its name, or hold it (spec §3.6)."""
    waiting = [
        row
        for row in txn.steps.values()
        if row.state == StepState.WAITING
        and txn.definition[row.step_id].kind == "wait_for"
        and txn.definition[row.step_id].value == event.name
    ]
    if not waiting:
        return None
    row = min(waiting, key=lambda r: r.ready_seq)
    consume_event(txn, row, event)
    drain(txn)
    return row.step_id


# --- people -------------------------------------------------------------------------------------

DECISIONS = {
    "task": ("completed", "failed"),
    "approve": ("approved", "rejected", "failed"),
    "agent": ("returned", "completed", "failed"),
}


def decide(
    txn: LoadedRun,
    *,
    identity: Identity,
    work_item_id: str,
    snapshot: str,
    decision: str,
    output: dict | None,
    evidence: list[dict] | None,
    summary: str | None,
    next_step: str | None,
    reason: str | None,
    note: str | None,
    answered: evaluation.Answered | None = None,
) -> None:
    """Apply a person's decision, checked in the order tools.md gives (decide); `answered` is a task's check."""
    pk = public_pk(work_item_id, "w")
    item = next((i for i in txn.open_items() if i.pk == pk), None) if pk is not None else None
    if item is None:
        if pk is not None and WorkItem.objects.filter(pk=pk, run=txn.run).exists():
            raise Conflict("This work item was already decided.", ["already_decided"])
        raise NotFound(f"Run {txn.run.public_id} has no work item '{work_item_id}'.")
    if snapshot != snapshot_of(txn.run.data):
        raise Stale("The run data changed since this snapshot; read the run again and decide on what it shows.")
    if not may_decide(identity, item):
        raise Forbidden("Only a person in this work item's assignment may decide it.")
    row = item_step(txn, item)
    kind = item.kind
    problems = []
    if decision not in DECISIONS[kind]:
        problems.append(f"decision: '{decision}' is not allowed here; one of {', '.join(DECISIONS[kind])}")
    if decision != "completed":
        problems += [f"{name}: only with completed" for name, value in (("next", next_step), ("reason", reason),
                     ("output", output), ("evidence", evidence), ("summary", summary)) if value is not None]
        if decision != "approved" and not (note or "").strip():
            problems.append(f"note: required with {decision}")
    elif note is not None:
        problems.append("note: not with completed")
    if problems:
        raise Invalid("The decision's arguments do not fit this work item.", problems)
    by = identity.ref
    held = (row.escalation or {}).get("check")
    if held is not None and decision != "completed":
        _unshow_check(txn, row)
    if decision == "completed":
        if output is None and (item.escalation or {}).get("candidate"):
            candidate = item.escalation["candidate"]
            output = candidate.get("output", {})
            evidence = evidence if evidence is not None else candidate.get("evidence", [])
            summary = summary if summary is not None else candidate.get("summary")
            next_step = next_step if next_step is not None else candidate.get("next")
            reason = reason if reason is not None else candidate.get("reason")
        try:
            record = accept(
                txn, row, identity=identity, output=output or {}, evidence=evidence or [], summary=summary,
                next_step=next_step, reason=reason, require_summary=False,
            )
        except NotAccepted as refused:
            refuse_submission(txn, row, refused)
            raise
        if held is not None:
            _unshow_check(txn, row)
        verdict = None
        if item.escalation is None:
            try:
                verdict = check_verdict(txn, row, record=record, holder=f"item {item.pk}", answered=answered)
            except NotAccepted as refused:
                refuse_submission(txn, row, refused)
                raise
        elif held is not None:
            # check-1 §3: a person completing an escalated step is not checked again; the unsure verdict stays.
            record["check"] = held
        _close_items(txn, row, decision, by)
        submit(txn, row, identity=identity, record=record, verdict=verdict)
    elif decision == "approved":
        _close_items(txn, row, decision, by)
        record = {"decision": "approved", "by": by, "at": iso(txn.now)}
        if (note or "").strip():
            record["note"] = note
        complete(txn, row, record, txn.definition[row.step_id].next)
    elif decision == "rejected":
        _close_items(txn, row, decision, by)
        reject(txn, row, note=note, by=by)
    elif decision == "returned":
        _close_items(txn, row, decision, by)
        return_step(txn, row, note=note, by=by)
    else:
        _close_items(txn, row, decision, by)
        fail_step(txn, row, note=note, by=by)
    drain(txn)
