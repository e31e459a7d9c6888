"""The profiles the server advertises: parallel-1 on major-incident, check-1 on vendor-check (spec §8)."""

from __future__ import annotations

from ..flows import (
    LINK,
    SUMMARY,
    claim,
    complete_task,
    decide,
    fresh_item,
    item_for,
    start,
    state,
    work_agent_step,
)
from ..framework import Skip, section

INCIDENT = "major-incident"
BRANCHES = {"operations": "operations-lead", "security": "security-lead", "communications": "communications-lead"}
OUTPUTS = {"operations": {"recoverySummary": "Service restored."},
           "security": {"containmentSummary": "Contained; no data left."},
           "communications": {"communicationsSummary": "Notice published."}}
VENDOR = "vendor-check"


def link() -> list[dict]:
    return [{"kind": "link", "ref": LINK}]


@section("parallel", "Profile parallel-1", "profiles/parallel.md", [
    ("par.fork", "the parallel step waits and every branch entry is made ready in the same write",
     "profiles/parallel.md §3 Fork"),
    ("par.sibling_stale", "a sibling's completion makes a decision prepared before it stale",
     "profiles/parallel.md §3 Snapshots"),
    ("par.join", "when the last branch joins, the parallel step is done and its next is ready",
     "profiles/parallel.md §3 Join"),
    ("par.rework", "a rejection back to the parallel step rewinds every branch into history and makes the entries ready",
     "profiles/parallel.md §3 Rework"),
])
def parallel(context, rec):
    if not context.advertises("parallel-1"):
        raise Skip("the server does not advertise parallel-1")
    context.need_process(INCIDENT)
    people = {step: context.person(role=role) for step, role in BRANCHES.items()}
    commander, commander_caller = context.person()
    agent = context.agent
    view = start(context, agent, INCIDENT, inputs={"incidentId": "INC-conformance", "commander": commander.value})
    run_id = view["run"]["id"]
    view = work_agent_step(context, agent, run_id, "activate", output={"bridge": "BRIDGE-1"})
    with rec.check("par.fork"):
        assert state(view, "respond") == "waiting", state(view, "respond")
        for step in BRANCHES:
            assert state(view, step) == "waiting", f"{step} is {state(view, step)}"
            item_for(view, step)
    operations = item_for(view, "operations")
    _, security = people["security"]
    view = complete_task(context, security, item_for(view, "security"), output=OUTPUTS["security"], evidence=link())
    _, ops = people["operations"]
    with rec.check("par.sibling_stale"):
        arguments = {k: v for k, v in operations["decide"]["arguments"].items() if k != "requestId"}
        ops.fails("decide", "stale", **arguments, decision="completed", output=OUTPUTS["operations"], evidence=link())
    complete_task(context, ops, fresh_item(ops, run_id, "operations"), output=OUTPUTS["operations"], evidence=link())
    _, comms = people["communications"]
    view = complete_task(context, comms, fresh_item(comms, run_id, "communications"),
                         output=OUTPUTS["communications"], evidence=link())
    with rec.check("par.join"):
        assert state(view, "respond") == "done", state(view, "respond")
        assert state(view, "close_review") == "waiting", state(view, "close_review")
        item_for(view, "close_review")
    with rec.check("par.rework"):
        view = decide(commander_caller, item_for(view, "close_review"), "rejected", note="Security must confirm again.")
        assert state(view, "respond") == "waiting", state(view, "respond")
        steps = view["data"]["steps"]
        for step, output in OUTPUTS.items():
            assert state(view, step) == "waiting", f"{step} is {state(view, step)}"
            assert "output" not in steps[step], f"{step} kept its current output"
            assert [entry.get("output") for entry in steps[step].get("history", [])] == [output], steps[step]
            item_for(view, step)
        assert steps["close_review"].get("decision") == "rejected", steps["close_review"]


@section("check", "Profile check-1", "profiles/check.md", [
    ("check.objective_first", "a submission that breaks the objective rules is refused before any check runs",
     "profiles/check.md §3"),
])
def check_profile(context, rec):
    if not context.advertises("check-1"):
        raise Skip("the server does not advertise check-1")
    context.need_process(VENDOR)
    agent = context.agent
    run_id = start(context, agent, VENDOR, inputs={"vendorName": "Acme", "amount": 48000})["run"]["id"]
    claimed = claim(context, agent, run_id, "check_vendor")
    with rec.check("check.objective_first"):
        error = agent.fails("submit", "not_accepted", token=claimed["token"], output={"cleared": "yes"},
                            summary=SUMMARY, next="approve", reason="Cleared.")
        issues = error.get("issues") or []
        assert issues and not [issue for issue in issues if issue.startswith("check:")], issues
