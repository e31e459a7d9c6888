"""A person's decision on a work item (spec §3.4, tools.md decide), checked in the order tools.md gives."""

from __future__ import annotations

from accounts.identity import Identity

from . import evaluation
from .agent_steps import accept, check_verdict, refuse_submission, return_step, submit, unshow_check
from .assignments import may_decide
from .canonical import iso, snapshot_of
from .engine import close_items, complete, drain, fail_step, item_step, reject
from .errors import Conflict, Forbidden, Invalid, NotAccepted, NotFound, Stale
from .models import WorkItem, public_pk
from .store import LoadedRun

# What a note must say when a decision needs one.
NOTE_ASKS = {
    "rejected": "say why you reject it",
    "failed": "say why it fails",
    "returned": "say what the agent is to do again",
}

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
            problems.append(f"note: required: {NOTE_ASKS.get(decision, 'say why')}")
    elif note is not None:
        problems.append("note: not with completed")
    if problems:
        raise Invalid("The decision's arguments do not fit this work item.", problems)
    by = identity.ref
    txn.actor = identity.user.pk
    held = (row.escalation or {}).get("check")
    if held is not None and decision != "completed":
        unshow_check(txn, row)
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
            unshow_check(txn, row)
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
        close_items(txn, row, decision, by)
        submit(txn, row, identity=identity, record=record, verdict=verdict)
    elif decision == "approved":
        close_items(txn, row, decision, by)
        record = {"decision": "approved", "by": by, "at": iso(txn.now)}
        if (note or "").strip():
            record["note"] = note
        complete(txn, row, record, txn.definition[row.step_id].next)
    elif decision == "rejected":
        close_items(txn, row, decision, by)
        reject(txn, row, note=note, by=by)
    elif decision == "returned":
        close_items(txn, row, decision, by)
        return_step(txn, row, note=note, by=by)
    else:
        close_items(txn, row, decision, by)
        fail_step(txn, row, note=note, by=by)
    drain(txn)
