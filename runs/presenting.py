"""The shapes tools return: run views, work items, claims and work lists (tools.md)."""

from __future__ import annotations

from processes.definition import Definition
from processes.kinds import StepKind

from .canonical import iso, snapshot_of
from .decisions import DECISIONS
from .files import data_with_urls, with_urls
from .models import Run, RunStep, StepState

NEW_REQUEST_ID = "<new UUID>"


def step_entry(row: RunStep) -> dict:
    entry = {"id": row.step_id, "kind": row.kind, "state": row.state}
    if row.due_at and row.state in (StepState.READY, StepState.CLAIMED, StepState.WAITING):
        entry["due"] = iso(row.due_at)
        entry["overdue"] = row.overdue
    return entry


def assigned_to(item) -> dict:
    if item.for_operators:
        return {"group": "operators"}
    if item.assigned_group_id is not None:
        return {"group": f"g_{item.assigned_group_id}"}
    return {"person": item.assigned_person}


def escalation_view(escalation: dict | None) -> dict | None:
    if not escalation:
        return None
    view = dict(escalation)
    candidate = view.get("candidate")
    if candidate and candidate.get("evidence"):
        view["candidate"] = {**candidate, "evidence": with_urls(candidate["evidence"])}
    return view


def work_item(run: Run, definition: Definition, item, row: RunStep, snapshot: str) -> dict:
    step = definition[row.step_id]
    requirements = step.requirements()
    view = {
        "id": item.public_id,
        "stepId": row.step_id,
        "kind": item.kind,
        "text": step.instructions,
        **requirements,
        "handoff": row.handoff or None,
        "assignedTo": assigned_to(item),
        "snapshot": snapshot,
        "due": iso(row.due_at),
        "escalation": escalation_view(item.escalation),
        "decide": {
            "tool": "decide",
            "arguments": {
                "runId": run.public_id,
                "workItemId": item.public_id,
                "snapshot": snapshot,
                "requestId": NEW_REQUEST_ID,
            },
            "decisions": list(DECISIONS[item.kind]),
        },
    }
    if item.kind == StepKind.APPROVE:
        view.update(output=None, evidence=None, next=None)
    if run.mode == "test":
        view["mode"] = "test"
    return view


def run_summary(run: Run) -> dict:
    return {
        "id": run.public_id,
        "process": run.process_name,
        "version": run.version.number,
        "mode": run.mode,
        "state": run.state,
        "outcome": run.outcome,
        "ended": run.ended,
        "startedBy": run.started_by,
        "startedAt": iso(run.started_at),
        "updatedAt": iso(run.updated_at),
    }


def run_view(run: Run, definition: Definition, rows: list[RunStep], items: list) -> dict:
    """The run view of tools.md: run, data, steps, open work items and the body; never a token."""
    by_pk = {row.id: row for row in rows}
    ordered = sorted(rows, key=lambda row: row.position)
    open_items = sorted((item for item in items if item.state == "open"), key=lambda i: (i.created_at, i.pk or 0))
    # The data's hash is a decision's snapshot (spec §3.4): only a run with open work items shows one.
    snapshot = snapshot_of(run.data) if open_items else None
    return {
        "run": run_summary(run),
        "data": data_with_urls(run.data),
        "steps": [step_entry(row) for row in ordered],
        "workItems": [work_item(run, definition, item, item.step_row or by_pk[item.step_id], snapshot) for item in open_items],
        "body": definition.body,
    }


def claim_result(run: Run, definition: Definition, row: RunStep, token: str, expires_at) -> dict:
    step = definition[row.step_id]
    return {
        "token": token,
        "expiresAt": iso(expires_at),
        "mode": run.mode,
        "step": {"id": step.id, "instructions": step.instructions, **step.requirements()},
        "handoff": row.handoff or None,
        "body": definition.body,
        "data": data_with_urls(run.data),
    }


def agent_work_entry(row: RunStep, run: Run) -> dict:
    return {
        "runId": run.public_id,
        "stepId": row.step_id,
        "process": run.process_name,
        "version": run.version.number,
        "mode": run.mode,
        "readySince": iso(row.ready_since),
        "due": iso(row.due_at),
        "overdue": row.overdue,
        "handoff": row.handoff or None,
        "claim": {
            "tool": "claim",
            "arguments": {"runId": run.public_id, "stepId": row.step_id, "requestId": NEW_REQUEST_ID},
        },
    }
