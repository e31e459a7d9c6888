"""Ending a run: a failed decision, a rejection without on_reject, an operator's cancel (spec §3.4, §3.5)."""

from __future__ import annotations

from ..flows import claim, decide, item_for, start, state, work_agent_step
from ..framework import section
from .agents import OUTPUT, PROCESS, acceptable

UNFINISHED = ("ready", "claimed", "waiting")


@section("ending", "Ending and cancelling runs", "spec §3.5", [
    ("end.cancel_forbidden", "cancel from an agent or from a person who is not an operator is forbidden",
     "spec §4.1 cancel; spec §6 rule 4"),
    ("end.cancel", "an operator's cancel ends the run cancelled: the reason recorded, unfinished steps cancelled",
     "spec §3.5; tools.md cancel"),
    ("end.tokens", "after a cancel the outstanding token and a second cancel are conflict run_ended",
     "spec §3.5"),
    ("end.failed", "a failed decision ends the run failed, the step failed with its note, no work left open",
     "spec §3.4; spec §3.5"),
    ("end.rejected", "a rejection without on_reject ends the run rejected, the note in ended",
     "spec §3.2; spec §3.5"),
])
def ending(context, rec):
    agent = context.agent
    context.need_process(PROCESS)
    _, operator = context.person(operator=True)
    run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-cancel"})["run"]["id"]
    claimed = claim(context, agent, run_id, "diagnose")
    reason = "Opened twice by mistake."
    with rec.check("end.cancel_forbidden"):
        agent.fails("cancel", "forbidden", runId=run_id, reason=reason)
        _, plain = context.person(operator=False)
        plain.fails("cancel", "forbidden", runId=run_id, reason=reason)
    view = operator.write("cancel", runId=run_id, reason=reason)
    with rec.check("end.cancel"):
        run = view["run"]
        assert (run["state"], run["outcome"]) == ("cancelled", None), run
        assert run["ended"] and run["ended"]["note"] == reason and run["ended"]["by"], run["ended"]
        assert state(view, "diagnose") == "cancelled", state(view, "diagnose")
        assert not [s["id"] for s in view["steps"] if s["state"] in UNFINISHED] and view["workItems"] == []
    with rec.check("end.tokens"):
        agent.conflict("submit", "run_ended", **acceptable(claimed["token"]))
        operator.conflict("cancel", "run_ended", runId=run_id, reason="Again.")
    with rec.check("end.failed"):
        _, lead = context.person(role="tier1-lead")
        run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-failed"})["run"]["id"]
        view = work_agent_step(context, agent, run_id, "diagnose", output=OUTPUT, next="tier1_handoff",
                               reason="Not fixed.")
        note = "The customer withdrew the ticket."
        view = decide(lead, item_for(view, "tier1_handoff"), "failed", note=note)
        run = view["run"]
        assert (run["state"], run["outcome"]) == ("ended", "failed") and run["ended"]["note"] == note, run
        assert state(view, "tier1_handoff") == "failed", state(view, "tier1_handoff")
        record = view["data"]["steps"]["tier1_handoff"]
        assert (record.get("decision"), record.get("note")) == ("failed", note), record
        assert not [s["id"] for s in view["steps"] if s["state"] in UNFINISHED] and view["workItems"] == []
    with rec.check("end.rejected"):
        name = "customer-offboarding"
        context.need_process(name)
        _, owner = context.person(role="account-owner")
        view = start(context, agent, name, inputs={"customerId": "C-conformance", "effectiveAt": "2020-01-01T00:00:00Z"})
        note = "The customer did not authenticate."
        view = decide(owner, item_for(view, "authorize"), "rejected", note=note)
        run = view["run"]
        assert (run["state"], run["outcome"]) == ("ended", "rejected"), run
        assert run["ended"]["note"] == note and run["ended"]["by"] == view["data"]["steps"]["authorize"]["by"], run["ended"]
        assert view["workItems"] == []
