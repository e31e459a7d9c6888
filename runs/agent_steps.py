"""An agent's step: its claim and lease, renewals, a submission and its check (check-1), escalation.

Each function takes a run loaded under its lock (store.LoadedRun) and changes it through the engine.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from accounts.identity import Identity
from base import backend
from processes.kinds import StepKind

from . import evaluation, leases, passages
from .acceptance import check_submission
from .canonical import data_size, iso
from .engine import (
    clear_claim,
    complete,
    drain,
    open_escalation_item,
    open_person_item,
    with_record,
)
from .errors import Conflict, Forbidden, NotAccepted, NotFound, Retry, Stale
from .evidence import recorded_evidence, verify_files
from .models import Lease, RunStep, StepState
from .store import LoadedRun
from .transitions import move


def claim(txn: LoadedRun, *, identity: Identity, step_id: str) -> Lease:
    """Give the caller the ready agent step for one lease (spec §3.3, §6 rule 2)."""
    row = txn.steps.get(step_id)
    if row is None:
        raise NotFound(f"Run {txn.run.public_id} has no step '{step_id}'.")
    if txn.definition[step_id].kind != StepKind.AGENT:
        raise Forbidden(f"Step '{step_id}' is not an agent step; people complete it with decide.")
    if identity.is_human:
        raise Forbidden("Only an agent claims steps; a person decides work items.")
    if row.state == StepState.CLAIMED:
        code = "claimed_by_you" if row.claimed_by == identity.ref else "claimed_by_other"
        raise Conflict(f"Step '{step_id}' is already claimed.", [code])
    if row.state != StepState.READY:
        raise Conflict(f"Step '{step_id}' is not ready.", ["not_ready"])
    lease = _issue_lease(txn, row, identity)
    move(row, StepState.CLAIMED)
    return lease


def _issue_lease(txn: LoadedRun, row: RunStep, identity: Identity) -> Lease:
    expires = txn.now + dt.timedelta(seconds=settings.LEASE_SECONDS)
    lease = backend.created(
        Lease, public_id=leases.new_lease_id(), run=txn.run, step=row, holder=identity.ref, issued_at=txn.now, expires_at=expires
    )
    txn.new_leases.append(lease)
    row.lease = lease
    row.lease_expires_at = expires
    row.claimed_by = identity.ref
    return lease


def held_step(txn: LoadedRun, lease: Lease, identity: Identity) -> RunStep:
    """Return the step a lease holds, or raise `stale` when the lease ended or was replaced."""
    row = next(r for r in txn.steps.values() if r.id == lease.step_id)
    if row.state != StepState.CLAIMED or row.lease_id != lease.id:
        raise Stale("This token's lease has ended or was replaced; call get_work again.")
    if lease.holder != identity.ref:
        raise Forbidden("This token was issued to another caller.")
    return row


def renew(txn: LoadedRun, row: RunStep, *, identity: Identity, progress: str | None) -> Lease:
    if progress is not None:
        row.progress = progress
    return _issue_lease(txn, row, identity)


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
    passages.refused(txn, row)
    row.handoff = {**(row.handoff or {}), "issues": refused.issues}
    if isinstance(refused, evaluation.CheckFailed):
        row.handoff["check"] = refused.verdict


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
    move(row, StepState.WAITING)
    # The row keeps what the work item does not show: the lines for a return, and what to put back.
    row.escalation = {**escalation, "lines": lines, "covers": covers}
    clear_claim(row)
    open_escalation_item(txn, row, escalation)


def _show_check(txn: LoadedRun, step_id: str, verdict: dict) -> dict:
    """Show a waiting verdict as `steps.<id>.check`, even over an earlier completion; return what it covers."""
    steps = dict(txn.run.data.get("steps", {}))
    entry = steps.get(step_id)
    steps[step_id] = {**(entry or {"history": []}), "check": verdict}
    txn.run.data = {**txn.run.data, "steps": steps}
    return {"absent": entry is None, "check": (entry or {}).get("check")}


def unshow_check(txn: LoadedRun, row: RunStep) -> None:
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
    move(row, StepState.WAITING)
    row.escalation = escalation
    clear_claim(row)
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
        move(row, StepState.WAITING)
        open_person_item(txn, step, row)
    else:
        move(row, StepState.READY)
