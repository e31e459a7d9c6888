"""A run's own transitions (spec §3, §6): reaching a step, completing, rejecting, failing, ending, time
and events. What an agent does to its step (claim, renew, submit, escalate) is in runs.agent_steps, and
a person's decision in runs.decisions; all of them change a state only through `transitions.move`,
whose tables declare every change there is.

A write opens one transaction (in runs.tools), locks the run row with `load_for_write`, applies
whatever time has made due, performs its change through the functions below, and calls `flush`.
Everything a change triggers (a next step, a wait already past, a held event, a join, a finish)
is applied before `flush` returns, so the run view a write returns is already complete.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from accounts.identity import Identity
from accounts.members import member_by_email
from base import backend, metrics, sql
from processes.definition import JOIN, StepDef, definition_for, duration_seconds
from processes.kinds import WORK_KINDS, StepKind
from processes.models import RoleBinding
from processes.spec import STEP_ID_PATTERN

from . import effects, passages, store
from .acceptance import check_fields, parse_datetime
from .canonical import data_size, iso
from .errors import Forbidden, Invalid
from .models import (
    ACTIVE_STATES,
    Event,
    Run,
    RunState,
    RunStep,
    StepState,
    WorkItem,
    WorkItemState,
)
from .store import LoadedRun
from .transitions import move

SERVER = "server"


# --- loading and saving -------------------------------------------------------------------------


def load_for_write(run_id: int | None, **how) -> LoadedRun:
    """Lock the run row, load its steps and apply what time has made due; needs an open transaction.

    `how` is what store.load takes besides the run's key: the organization, a lease, more queries.
    """
    txn = store.load(run_id, **how)
    if not txn.run.is_over:
        apply_time(txn)
    return txn


def flush(txn: LoadedRun) -> None:
    """Settle the run's state and wake-up from its steps, save what the write changed (store.save) and
    record what it owes beyond its rows (runs.effects)."""
    run = txn.run
    if not run.is_over:
        move(run, derive_run_state(txn))
    run.wake_at = None if run.is_over else next_wake(txn)
    run.updated_at = txn.now
    effects.record(txn, store.save(txn))


def derive_run_state(txn: LoadedRun) -> str:
    """`active` while any step is ready or claimed, else `waiting` (spec §3.5)."""
    if any(row.state in (StepState.READY, StepState.CLAIMED) for row in txn.steps.values()):
        return RunState.ACTIVE
    return RunState.WAITING


def next_wake(txn: LoadedRun) -> dt.datetime | None:
    moments = []
    for row in txn.steps.values():
        state = row.state  # read once: a guarded field reads through its descriptor (runs.transitions)
        if state == StepState.CLAIMED and row.lease_expires_at:
            moments.append(row.lease_expires_at)
        if state == StepState.WAITING and row.wake_at:
            moments.append(row.wake_at)
        if state in ACTIVE_STATES and row.due_at and not row.overdue:
            moments.append(row.due_at)
    return min(moments) if moments else None


# --- time ---------------------------------------------------------------------------------------


def apply_time(txn: LoadedRun) -> None:
    """Apply every ended lease, passed wait, timeout and deadline up to `txn.now`."""
    now = txn.now
    over = txn.run.is_over  # read again only after what may end the run
    for row in list(txn.steps.values()):
        if over:
            return
        state = row.state  # a guarded field reads through its descriptor: read again only after a move
        if state == StepState.CLAIMED and row.lease_expires_at and row.lease_expires_at <= now:
            _expire_lease(txn, row)
            state, over = row.state, txn.run.is_over
        if state == StepState.WAITING and row.wake_at and row.wake_at <= now:
            _wake(txn, row)
            state, over = row.state, txn.run.is_over
        if state in ACTIVE_STATES and row.due_at and row.due_at <= now and not row.overdue:
            row.overdue = True
            if not row.overdue_noticed:
                row.overdue_noticed = True
                txn.notices.append((row.step_id, row.attempt))
    drain(txn)


def _expire_lease(txn: LoadedRun, row: RunStep) -> None:
    metrics.LEASES_EXPIRED.inc()
    passages.expired(txn, row)
    move(row, StepState.READY)
    if row.progress:
        row.handoff = {**(row.handoff or {}), "progress": row.progress}
        row.progress = None  # handed off once; the next lease starts with no note of its own
    clear_claim(row)


def clear_claim(row: RunStep) -> None:
    row.lease = None
    row.lease_expires_at = None
    row.claimed_by = None


def _wake(txn: LoadedRun, row: RunStep) -> None:
    step = txn.definition[row.step_id]
    row.wake_at = None
    if step.kind == StepKind.WAIT_FOR:
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
    # When the step was last reached, whatever its kind: the start of its time on the operators' map.
    row.ready_since = now
    if step.kind == StepKind.FINISH:
        move(row, StepState.DONE)
        row.done_seq = row.ready_seq
        passages.finished(txn, row, outcome=step.value)
        end_run(txn, state=RunState.ENDED, outcome=step.value, by=SERVER, note=None)
        return
    if step.kind in WORK_KINDS:
        row.attempt += 1
        row.handoff = None
        row.progress = None
        row.escalation = None
        row.overdue = False
        row.overdue_noticed = False
        row.due_at = now + dt.timedelta(seconds=step.due_seconds) if step.due_seconds else None
    if step.kind == StepKind.AGENT:
        move(row, StepState.READY)
    elif step.is_person:
        move(row, StepState.WAITING)
        open_person_item(txn, step, row)
    elif step.kind == StepKind.WAIT:
        move(row, StepState.WAITING)
        row.wake_at = now + dt.timedelta(seconds=parse_wait(step.value))
    elif step.kind == StepKind.WAIT_UNTIL:
        value = read_path(txn.run.data, step.value)
        moment = parse_datetime(value)
        if moment is None:
            shown = "missing" if value is None else "not a datetime"
            fail_by_server(txn, row, f"{step.value} is {shown}; wait_until needs an RFC 3339 datetime.")
            return
        move(row, StepState.WAITING)
        if moment <= now:
            complete(txn, row, {"by": SERVER, "at": iso(now)}, step.next)
        else:
            row.wake_at = moment
    elif step.kind == StepKind.WAIT_FOR:
        move(row, StepState.WAITING)
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
    elif step.kind == StepKind.PARALLEL:
        move(row, StepState.WAITING)
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
    # A published version's bindings never change: kept on the version this process has cached.
    cache = getattr(txn.run.version, "bound_groups", None)
    if cache is None:
        cache = dict(RoleBinding.objects.filter(version=txn.run.version).values_list("role", "group_id"))
        txn.run.version.bound_groups = cache
    return cache


def open_person_item(txn: LoadedRun, step: StepDef, row: RunStep) -> None:
    item = WorkItem(organization_id=txn.run.organization_id, run=txn.run, step=row, kind=step.kind, created_at=txn.now)
    item.step_row = row
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
        user = member_by_email(txn.run.organization_id, value) if isinstance(value, str) else None
        if user is None:
            shown = "missing" if value is None else f"'{value}', which is no active member of this organization"
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
        kind=StepKind.AGENT,
        for_operators=True,
        escalation=escalation,
        created_at=txn.now,
    )
    item.step_row = row
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
    passages.passed(txn, row, went_to=target, by=(record or {}).get("by") or SERVER)
    move(row, StepState.DONE)
    row.done_seq = txn.next_seq()
    row.went_to = target
    row.wake_at = None
    row.progress = None
    clear_claim(row)
    close_items(txn, row)
    if target == JOIN:
        _maybe_join(txn, step.branch)
    elif target:
        reach(txn, target)


def close_items(txn: LoadedRun, row: RunStep, decision: str | None = None, by: str | None = None) -> None:
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
    row = item.step_row
    if row is None:
        row = next(r for r in txn.steps.values() if r.pk == item.step_id)
        item.step_row = row
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
    move(row, StepState.DONE)
    row.done_seq = txn.next_seq()
    row.went_to = step.on_reject
    close_items(txn, row)
    if not step.on_reject:
        passages.failed(txn, row, outcome="rejected", by=by)
        end_run(txn, state=RunState.ENDED, outcome="rejected", by=by, note=note)
        return
    passages.rejected(txn, row, back_to=step.on_reject, by=by)
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
            move(row, None)
            row.went_to = None


def fail_step(txn: LoadedRun, row: RunStep, *, note: str, by: str) -> None:
    """Record a `failed` decision on the step and end the run `failed` (spec §3.4, §3.5)."""
    _store(txn, row.step_id, {"decision": "failed", "note": note, "by": by, "at": iso(txn.now)})
    passages.failed(txn, row, outcome="failed", by=by)
    move(row, StepState.FAILED)
    clear_claim(row)
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
            move(row, StepState.CANCELLED)
            clear_claim(row)
            row.wake_at = None
    for row in txn.steps.values():
        close_items(txn, row)
    txn.discard_events = run.holds_events
    txn.queue.clear()


# --- the writes -----------------------------------------------------------------------------------


def new_run(
    *, identity: Identity, version, inputs: dict, mode: str, now: dt.datetime | None = None, key: int | None = None
) -> LoadedRun:
    """Create a run of `version` and make its first step ready; refuse inputs the process does not take.
    `key`: the run's key, taken from its sequence ahead, which its steps then hold from the start."""
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
    run = backend.created(
        Run,
        id=key,
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
        step.id: backend.created(
            RunStep, run=run, organization_id=run.organization_id, process_name=run.process_name, version=version,
            mode=mode, step_id=step.id, position=step.index, kind=step.kind,
        )
        for step in definition.steps
    }
    txn = LoadedRun(run=run, definition=definition, steps=steps, now=now,
                    actor=identity.user.pk if identity.is_human else None)
    txn.holds_no_items()
    reach(txn, definition.first.id)
    drain(txn)
    return txn


# --- check-1 (profiles/check.md §3) -------------------------------------------------------------


def cancel(txn: LoadedRun, *, identity: Identity, reason: str) -> None:
    """Cancel the run for an operator of its organization, with the reason they give (spec §3.5)."""
    if not (identity.is_human and identity.is_operator):
        raise Forbidden("Only an operator of this organization may cancel a run.")
    if not reason.strip():
        raise Invalid("A cancel needs a reason.", ["reason: required"])
    # Counted at the step the run has waited at longest (a parallel step only waits for its branches).
    at_work = [row for row in txn.steps.values() if row.state in ACTIVE_STATES]
    at_work = [row for row in at_work if row.kind != StepKind.PARALLEL] or at_work
    passages.failed(txn, min(at_work, key=lambda r: r.ready_seq, default=None), outcome="cancelled", by=identity.ref)
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
    event = backend.created(Event, run=txn.run, name=name, data=data, sent_by=identity.ref, sent_at=txn.now)
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
        and txn.definition[row.step_id].kind == StepKind.WAIT_FOR
        and txn.definition[row.step_id].value == event.name
    ]
    if not waiting:
        return None
    row = min(waiting, key=lambda r: r.ready_seq)
    consume_event(txn, row, event)
    drain(txn)
    return row.step_id


# --- people -------------------------------------------------------------------------------------


