"""People: work items, snapshots, the order of refusals, rejection into on_reject (spec §3.1, §3.4, §3.5).

One run of support-escalation goes through every person step: the tier 1 handoff and engineering tasks,
the confirmation that rejects back to the handoff, then approves, and the agent closing the ticket.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..calls import Caller
from ..config import Person
from ..flows import (
    LINK,
    SUMMARY,
    claim,
    complete_task,
    decide,
    fresh_item,
    item_for,
    person_entry,
    start,
    state,
    submit,
    work_agent_step,
)
from ..framework import Skip, section
from .agents import OUTPUT, PROCESS

HANDOFF = {"reproduction": "Open the report page twice.", "impact": "Reports fail for one customer.", "severity": "high"}
HANDOFF_AGAIN = {**HANDOFF, "reproduction": "Open the report page twice, signed in as an admin."}
ENGINEERING = {"resolution": "Deployed the cache fix.", "issue": "ENG-1"}
REJECTION = "The customer still sees the error; reproduce it again."
SNAPSHOT_FIELDS = ("snapshot",)


def without_snapshots(item: dict) -> dict:
    """The work item less what a later read may change: its snapshot, also inside the decide call."""
    copy = {key: value for key, value in item.items() if key not in SNAPSHOT_FIELDS}
    call = dict(copy.get("decide") or {})
    call["arguments"] = {k: v for k, v in (call.get("arguments") or {}).items() if k not in SNAPSHOT_FIELDS}
    copy["decide"] = call
    return copy


def link() -> list[dict]:
    return [{"kind": "link", "ref": LINK}]


@section("people", "People and decisions", "spec §3.4", [
    ("people.work_item", "a person step creates one work item: the step's text and requirements, a snapshot, due, "
     "the exact decide call", "spec §3.4; tools.md run view"),
    ("people.get_work", "a person's get_work lists the item as the run view shows it", "spec §3.4; tools.md get_work"),
    ("people.outsider", "a person outside the assignment does not get the item in get_work and is forbidden to decide",
     "spec §3.4; tools.md get_work; tools.md decide"),
    ("people.decide_arguments", "decide refuses next off completed, note with completed, output off completed as invalid",
     "tools.md decide"),
    ("people.not_accepted", "a person's task submission meets the agent's acceptance: not_accepted names every issue",
     "spec §3.4; spec §6 rule 3"),
    ("people.stale", "a decision carrying a snapshot from before the run data changed is stale", "spec §3.4"),
    ("people.fresh_snapshot", "after stale, get_run gives a current snapshot and the decision is accepted; the decided "
     "item leaves get_work", "spec §3.4; tools.md decide; tools.md get_work"),
    ("people.already_decided", "a decision on a decided item is conflict already_decided, checked before stale",
     "spec §3.4; tools.md decide"),
    ("people.first_decision_wins", "of two group members deciding, the first wins and the second gets already_decided",
     "spec §3.4"),
    ("people.rejection", "a rejection returns to on_reject: later completions move to history, the note stays current",
     "spec §3.1; spec §3.2"),
    ("people.history", "a step completed again keeps the earlier completion in history", "spec §3.1"),
    ("people.single_next", "next and reason on a step whose next is not a list are not_accepted", "spec §3.2"),
    ("people.finish", "a finish ends the run with its outcome; ended by the server with a null note",
     "spec §3.2; spec §3.5"),
    ("people.run_ended", "once the run ended every write is conflict run_ended, checked before anything else",
     "spec §3.5; tools.md decide"),
    ("people.initiator", "an agent may not start a process with an initiator step; a person who starts it is its initiator",
     "spec §3.4; tools.md start_run"),
])
def people(context, rec):
    context.need_process(PROCESS)
    lead, alice = context.person(role="tier1-lead")
    _, engineer = context.person(role="engineering-oncall")
    run_id = start(context, context.agent, PROCESS, inputs={"ticketId": "T-conformance-people"})["run"]["id"]
    desk = Desk(run_id, lead, alice, engineer)
    work_items(context, rec, desk)
    snapshots(context, rec, desk)
    rejection(context, rec, desk)
    finishing(context, rec, desk)
    with rec.check("people.initiator"):
        initiator(context, lead, alice)


@dataclass
class Desk:
    """The people scenario's run, who works it, and its first work item (kept for the late decisions)."""

    run_id: str
    lead: Person
    alice: Caller
    engineer: Caller
    first: dict = field(default_factory=dict)


def work_items(context, rec, desk: Desk) -> None:
    """Bring the run to its first task; check the item, the person's get_work and decide's refusals."""
    agent, alice, run_id = context.agent, desk.alice, desk.run_id
    fixture = context.fixtures[PROCESS]
    view = work_agent_step(context, agent, run_id, "diagnose", output=OUTPUT, next="tier1_handoff",
                           reason="Not fixed by the runbook.")
    first = desk.first = item_for(view, "tier1_handoff")
    with rec.check("people.work_item"):
        step = fixture.steps["tier1_handoff"]
        assert (first["kind"], first["text"]) == ("task", step["task"]), (first["kind"], first["text"])
        assert (first["output"], first["evidence"], first["next"]) == (step["output"], step["evidence"], None), first
        assert "group" in first["assignedTo"] and first["snapshot"] and first["due"], first
        assert first["handoff"] is None and first["escalation"] is None, first
        call = first["decide"]
        assert call["tool"] == "decide" and call["decisions"] == ["completed", "failed"], call
        assert call["arguments"]["runId"] == run_id and call["arguments"]["workItemId"] == first["id"], call
        assert call["arguments"]["snapshot"] == first["snapshot"] and "requestId" in call["arguments"], call
    with rec.check("people.get_work"):
        entry = person_entry(alice, run_id, "tier1_handoff")
        assert entry is not None, f"{desk.lead.name}'s get_work does not list the item"
        assert (entry["runId"], entry["process"], entry["mode"]) == (run_id, PROCESS, "live"), entry
        assert without_snapshots(entry["workItem"]) == without_snapshots(first), "the item differs from the run view's"
    with rec.check("people.outsider"):
        _, outsider = context.outsider("tier1-lead")
        assert person_entry(outsider, run_id, "tier1_handoff") is None, "an outsider's get_work lists the item"
        outsider.fails("decide", "forbidden", **call_of(first), decision="failed", note="Not mine.")
    with rec.check("people.decide_arguments"):
        alice.fails("decide", "invalid", **call_of(first), decision="failed", note="No.", next="engineering",
                    reason="r")
        alice.fails("decide", "invalid", **call_of(first), decision="completed", output=HANDOFF, evidence=link(),
                    note="A note.")
        alice.fails("decide", "invalid", **call_of(first), decision="failed", note="No.", output=HANDOFF)
    with rec.check("people.not_accepted"):
        error = alice.fails("decide", "not_accepted", **call_of(first), decision="completed",
                            output={"reproduction": "Open it.", "severity": "medium"}, evidence=[])
        issues = error.get("issues") or []
        unnamed = [name for name in ("output.impact", "output.severity", "link")
                   if not any(name in issue for issue in issues)]
        assert not unnamed, f"no issue names {', '.join(unnamed)}: {issues}"


def snapshots(context, rec, desk: Desk) -> None:
    """Complete the first task; check stale, a fresh snapshot, and already_decided before stale."""
    alice, engineer, run_id, first = desk.alice, desk.engineer, desk.run_id, desk.first
    old_snapshot = first["snapshot"]
    view = complete_task(context, alice, fresh_item(alice, run_id, "tier1_handoff"), output=HANDOFF, evidence=link())
    engineering = item_for(view, "engineering")
    with rec.check("people.stale"):
        engineer.fails("decide", "stale", **call_of(engineering, snapshot=old_snapshot), decision="completed",
                       output=ENGINEERING, evidence=link())
    with rec.check("people.fresh_snapshot"):
        view = complete_task(context, engineer, fresh_item(engineer, run_id, "engineering"), output=ENGINEERING,
                             evidence=link())
        assert state(view, "engineering") == "done" and state(view, "confirm") == "waiting"
        assert person_entry(engineer, run_id, "engineering") is None, "the decided item is still in get_work"
    with rec.check("people.already_decided"):
        alice.conflict("decide", "already_decided", **call_of(first, snapshot=old_snapshot), decision="completed",
                       output=HANDOFF, evidence=link())


def rejection(context, rec, desk: Desk) -> None:
    """Reject the confirmation with a colleague deciding late; rework and approve; check the history."""
    alice, engineer, run_id = desk.alice, desk.engineer, desk.run_id
    confirm = fresh_item(alice, run_id, "confirm")
    colleague = None
    try:
        colleague = context.person(role="tier1-lead", exclude=(desk.lead.name,))[1]
        late_call = call_of(fresh_item(colleague, run_id, "confirm"))
    except Skip as exc:
        rec.skip("people.first_decision_wins", str(exc))
    view = decide(alice, confirm, "rejected", note=REJECTION)
    if colleague is not None:
        with rec.check("people.first_decision_wins"):
            colleague.conflict("decide", "already_decided", **late_call, decision="approved")
    with rec.check("people.rejection"):
        steps = view["data"]["steps"]
        assert steps["confirm"].get("decision") == "rejected" and steps["confirm"].get("note") == REJECTION, steps["confirm"]
        assert "output" not in steps["engineering"], f"engineering kept its current output: {steps['engineering']}"
        assert [entry.get("output") for entry in steps["engineering"].get("history", [])] == [ENGINEERING], steps["engineering"]
        assert steps["diagnose"].get("output") == OUTPUT, "the step before the returned-to step lost its output"
        assert state(view, "engineering") is None and state(view, "tier1_handoff") == "waiting"
        item_for(view, "tier1_handoff")
    view = complete_task(context, alice, item_for(view, "tier1_handoff"), output=HANDOFF_AGAIN, evidence=link())
    view = complete_task(context, engineer, item_for(view, "engineering"), output=ENGINEERING, evidence=link())
    view = decide(alice, item_for(view, "confirm"), "approved")
    approval = item_for(view, "confirm") if any(i["stepId"] == "confirm" for i in view["workItems"]) else None
    with rec.check("people.history"):
        steps = view["data"]["steps"]
        assert steps["tier1_handoff"]["output"] == HANDOFF_AGAIN, steps["tier1_handoff"]
        assert [entry.get("output") for entry in steps["tier1_handoff"]["history"]] == [HANDOFF], steps["tier1_handoff"]
        assert steps["confirm"]["decision"] == "approved", steps["confirm"]
        assert [entry.get("decision") for entry in steps["confirm"]["history"]] == ["rejected"], steps["confirm"]
        assert approval is None, "the decided approval is still open"


def finishing(context, rec, desk: Desk) -> None:
    """Close the ticket; check the finish and that every later write is run_ended."""
    agent, run_id, first = context.agent, desk.run_id, desk.first
    claimed = claim(context, agent, run_id, "close_ticket")
    with rec.check("people.single_next"):
        error = agent.fails("submit", "not_accepted", token=claimed["token"], output={"ticket": "T-conformance-people"},
                            evidence=link(), summary=SUMMARY, next="done", reason="It is closed.")
        issues = error.get("issues") or []
        assert any("next" in issue for issue in issues) and any("reason" in issue for issue in issues), issues
    view = submit(context, agent, claimed, output={"ticket": "T-conformance-people"})
    with rec.check("people.finish"):
        run = view["run"]
        assert (run["state"], run["outcome"]) == ("ended", "resolved"), run
        assert run["ended"] and run["ended"]["by"] == "server" and run["ended"]["note"] is None, run["ended"]
        assert state(view, "done") == "done" and view["workItems"] == []
    with rec.check("people.run_ended"):
        desk.alice.conflict("decide", "run_ended", **call_of(first), decision="approved")
        agent.conflict("claim", "run_ended", runId=run_id, stepId="close_ticket")
        agent.conflict("submit", "run_ended", token=claimed["token"], output={"ticket": 1}, summary="")
        agent.conflict("send_event", "run_ended", runId=run_id, name="late")


def call_of(item: dict, **changes) -> dict:
    """The item's decide arguments without requestId, with changes applied."""
    arguments = {k: v for k, v in item["decide"]["arguments"].items() if k != "requestId"}
    arguments.update(changes)
    return arguments


def initiator(context, person, caller) -> None:
    name = "expense-reimbursement"
    fixture = context.need_process(name)
    inputs = {"claimId": "C-conformance", "manager": person.value}
    context.agent.fails("start_run", "invalid", process=name, inputs=inputs)
    view = start(context, caller, name, inputs=inputs)
    item = item_for(view, fixture.frontmatter["steps"][0]["id"])
    assert item["assignedTo"] == {"person": person.value}, item["assignedTo"]
