"""Read a run view for people: names instead of refs, step records in order, a timeline, what changed.

Pure functions over the shapes tools.md returns, plus two bulk look-ups (`names_for`, `file_names`)
that take a fixed number of queries whatever the size of the run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from accounts.models import Agent, Group, User
from base.params import prefixed_id
from processes.definition import Definition
from processes.kinds import StepKind
from processes.wording import field_label, step_title
from runs.canonical import iso
from runs.models import Upload

SERVER = "server"


# --- who ----------------------------------------------------------------------------------------


def _walk_refs(view: dict) -> set[str]:
    refs: set[str] = set()
    run = view.get("run", {})
    refs.add(run.get("startedBy") or "")
    refs.add((run.get("ended") or {}).get("by") or "")
    for record in (view.get("data") or {}).get("steps", {}).values():
        for entry in [record, *record.get("history", [])]:
            refs.add(entry.get("by") or "")
    for item in view.get("workItems", []):
        refs.add((item.get("escalation") or {}).get("by") or "")
        refs.add(((item.get("handoff") or {}).get("returned") or {}).get("by") or "")
        refs.add((item.get("assignedTo") or {}).get("group") or "")
    refs.discard("")
    return refs


def person_name(user) -> str:
    """What a person is called on the pages: their full name and email, or the email alone."""
    full = user.get_full_name().strip()
    return f"{full} ({user.email})" if full else user.email


def names_for(organization, refs) -> dict[str, str]:
    """Map every ref (u_3, a_4, g_5, server, operators) to what a person calls it; two queries at most."""
    def ids(prefix):
        return {pk for pk in (prefixed_id(r, prefix[:-1]) for r in refs) if pk is not None}

    names = {SERVER: "the server", "operators": "Operators"}
    user_ids, agent_ids, group_ids = ids("u_"), ids("a_"), ids("g_")
    if user_ids:
        for user in User.objects.filter(pk__in=user_ids, membership__organization=organization):
            names[user.ref] = person_name(user)
    if agent_ids:
        agents = Agent.objects.filter(pk__in=agent_ids, organization=organization)
        for pk, name, for_email in agents.values_list("pk", "name", "for_user__email"):
            # An agent a person connected says whom it acts for.
            names[f"a_{pk}"] = f"{name} (agent, for {for_email})" if for_email else f"{name} (agent)"
    if group_ids:
        for pk, name in Group.objects.filter(pk__in=group_ids, organization=organization).values_list("pk", "name"):
            names[f"g_{pk}"] = name
    return names


def names_in_view(organization, view: dict, extra=()) -> dict[str, str]:
    return names_for(organization, _walk_refs(view) | set(extra))


def file_refs(data: dict) -> set[str]:
    refs = set()
    for record in data.get("steps", {}).values():
        for entry in [record, *record.get("history", [])]:
            refs.update(e["ref"] for e in entry.get("evidence") or [] if e.get("kind") == "file")
    return refs


def file_names(organization, refs) -> dict[str, str]:
    """Map upload ids to the names they were uploaded with; one query."""
    if not refs:
        return {}
    rows = Upload.objects.filter(organization=organization, public_id__in=list(refs)).values_list(
        "public_id", "file_name", "size"
    )
    return {ref: {"name": name, "size": size} for ref, name, size in rows}


# --- what has been done -------------------------------------------------------------------------


@dataclass
class StepRecord:
    """One step's current record and its earlier attempts, as the run data holds them."""

    id: str
    title: str
    kind: str
    current: dict | None
    history: list[dict] = field(default_factory=list)
    # Set for the step a work item is open on: whatever it holds is from an earlier attempt.
    earlier: bool = False


def step_records(definition: Definition, data: dict) -> list[StepRecord]:
    """Return the steps that hold anything in run data, in the order the process declares them."""
    steps = data.get("steps", {})
    out = []
    for step in definition.steps:
        record = steps.get(step.id)
        if not record:
            continue
        current = {k: v for k, v in record.items() if k != "history"} or None
        out.append(StepRecord(step.id, step_title(step.id), step.kind, current, list(record.get("history", []))))
    return out


def rejection_notes(definition: Definition, data: dict, step_id: str) -> list[dict]:
    """Return the current rejections that sent the run back to `step_id`, with their notes (spec §3.1)."""
    notes = []
    for step in definition.steps:
        record = data.get("steps", {}).get(step.id) or {}
        if step.kind == StepKind.APPROVE and step.on_reject == step_id and record.get("decision") == "rejected":
            notes.append({"step": step.id, "title": step_title(step.id), **record})
    return notes


def _verb(kind: str, record: dict) -> tuple[str, str]:
    decision = record.get("decision")
    if decision == "approved":
        return "approved", "ok"
    if decision == "rejected":
        return "rejected", "bad"
    if decision == "failed":
        return "failed the run at", "bad"
    if kind in (StepKind.WAIT, StepKind.WAIT_UNTIL):
        return "finished waiting at", "info"
    if kind == StepKind.WAIT_FOR:
        return "received the event for", "info"
    return "completed", "ok"


def timeline(definition: Definition, view: dict, items=(), takes=(), *, handovers=(), comments=()) -> list[dict]:
    """Every start, completion, decision, escalation, return, take, hand-over, comment and end of the run,
    oldest first."""
    run = view["run"]
    entries = [{"at": run["startedAt"], "by": run["startedBy"], "what": "started the run", "step": None,
                "tone": "info", "note": None, "earlier": False}]
    kinds = {step.id: step.kind for step in definition.steps}
    for step_id, record in view["data"].get("steps", {}).items():
        attempts = [(old, True) for old in record.get("history", [])]
        current = {k: v for k, v in record.items() if k != "history"}
        if current.get("by"):
            attempts.append((current, False))
        for entry, earlier in attempts:
            if not entry.get("by"):
                continue
            verb, tone = _verb(kinds.get(step_id, "agent"), entry)
            chosen = entry.get("next")
            entries.append({
                "at": entry.get("at"), "by": entry["by"], "what": verb, "step": step_id, "tone": tone,
                "note": entry.get("note") or entry.get("summary"), "route": chosen,
                "reason": entry.get("reason"), "earlier": earlier,
            })
    for item in items:
        escalation = item.escalation or {}
        if escalation.get("by"):
            entries.append({"at": escalation.get("at"), "by": escalation["by"], "what": "escalated",
                            "step": item.step.step_id, "tone": "bad", "note": escalation.get("note"),
                            "earlier": False})
        if item.decision == "returned" and item.decided_by:
            returned = (item.step.handoff or {}).get("returned") or {}
            at = iso(item.decided_at)
            entries.append({"at": at, "by": item.decided_by, "what": "returned to agents", "step": item.step.step_id,
                            "tone": "info", "note": returned.get("note") if returned.get("at") == at else None,
                            "earlier": False})
    entries.extend(_take_entries(takes))
    for handover in handovers:
        entries.append({"at": iso(handover.at), "by": handover.by.ref, "what": "assigned", "step": handover.item.step.step_id,
                        "tone": "info", "note": None, "earlier": False, "to": handover.to.ref})
    for comment in comments:
        item = comment.work_item
        entries.append({"at": iso(comment.created_at), "by": comment.author.ref,
                        "what": "commented on" if item else "commented", "step": item.step.step_id if item else None,
                        "tone": "info", "note": None, "earlier": False, "comment": comment.body})
    ended = run.get("ended")
    if ended:
        if run["state"] == "cancelled":
            what = "cancelled the run"
        elif run.get("outcome") in ("failed", "rejected"):
            what = f"ended the run: {field_label(run['outcome']).lower()}"
        else:
            what = f"Finished: {field_label(run.get('outcome') or '')}"
        by = None if ended.get("by") == SERVER else ended.get("by")
        entries.append({"at": ended.get("at"), "by": by, "what": what, "step": None,
                        "tone": "ok" if run["state"] == "ended" and run.get("outcome") not in ("failed", "rejected")
                        else "bad", "note": ended.get("note"), "earlier": False})
    return sorted(entries, key=lambda e: e.get("at") or "")


def _take_entries(takes) -> list[dict]:
    """A person taking an item, taking it over from a colleague, or letting it go."""
    entries = []
    for take in takes:
        base = {"step": take.item.step.step_id, "tone": "info", "note": None, "earlier": False, "by": take.user.ref}
        before = next((t for t in takes if t.taken_over_by_id == take.user_id and t.released_at == take.taken_at), None)
        entries.append({**base, "at": iso(take.taken_at), "what": "took over" if before else "took",
                        "who_else": before.user.ref if before else None})
        if take.released_at and take.taken_over_by_id is None:
            entries.append({**base, "at": iso(take.released_at), "what": "let go of"})
    return entries


# --- what changed since a page was read ---------------------------------------------------------


def _without_urls(value):
    # Signed file URLs change with every read; they are not run data (spec §5).
    if isinstance(value, dict):
        return {k: _without_urls(v) for k, v in value.items() if k != "url"}
    if isinstance(value, list):
        return [_without_urls(v) for v in value]
    return value


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(_without_urls(value), sort_keys=True, default=str).encode()).hexdigest()[:12]


def fingerprints(data: dict) -> str:
    """Return a compact record of run data, carried in a form so a stale decision can say what changed."""
    steps = {step_id: _digest(record) for step_id, record in data.get("steps", {}).items()}
    return json.dumps({"inputs": _digest(data.get("inputs", {})), "steps": steps}, separators=(",", ":"))


def changes_since(seen: str, definition: Definition, data: dict) -> list[dict]:
    """List the steps whose run data changed since `fingerprints` produced `seen`, in process order."""
    try:
        before = json.loads(seen)
        before_steps = dict(before.get("steps", {}))
    except (ValueError, AttributeError, TypeError):
        return []
    changed = []
    steps = data.get("steps", {})
    for step in definition.steps:
        record = steps.get(step.id)
        now = _digest(record) if record else None
        if before_steps.get(step.id) == now:
            continue
        current = {k: v for k, v in (record or {}).items() if k != "history"}
        if not current:
            how = "was sent back for rework; its earlier result is now in its history"
        elif current.get("decision"):
            how = {"approved": "was approved", "rejected": "was rejected"}.get(current["decision"], "failed")
        else:
            how = "was completed" if step.id not in before_steps else "was done again"
        changed.append({"step": step.id, "title": step_title(step.id), "how": how, "by": current.get("by"),
                        "at": current.get("at"), "note": current.get("note")})
    return changed


def preview(text: str, limit: int) -> str:
    """Text on one line, its line breaks as spaces, cut at a word before `limit` characters with `…`."""
    flat = " ".join((text or "").split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if flat[limit - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]  # the last word did not fit whole
    return cut.rstrip() + "…"
