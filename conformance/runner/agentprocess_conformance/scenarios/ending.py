"""Ending a run: a failed decision, a rejection without on_reject, an operator's cancel (spec §3.4, §3.5)."""

from __future__ import annotations

from ..flows import claim, decide, item_for, listed_anywhere, start, state, work_agent_step
from ..framework import section
from .agents import OUTPUT, PROCESS, acceptable

UNFINISHED = ("ready", "claimed", "waiting")


@section("ending", "Ending and cancelling runs", "spec §3.5", [
    ("end.cancel_forbidden", "cancel from an agent or from a person who is not an operator is forbidden",
     "spec §4.1 cancel; spec §6 rule 4"),
    ("end.cancel", "an operator's cancel ends the run cancelled: the reason recorded, the claimed step cancelled",
     "spec §3.5; tools.md cancel"),
    ("end.cancel_ready", "cancelling a run whose step is ready (not claimed) cancels that step: it cannot be claimed",
     "spec §3.5"),
    ("end.cancel_waiting", "cancelling a run with an open work item removes the item: no decision is taken on it",
     "spec §3.5; tools.md decide"),
    ("end.tokens", "after a cancel the outstanding token is conflict run_ended on submit, renew and escalate, "
     "and so is a second cancel", "spec §3.5; tools.md cancel"),
    ("end.get_work", "no step or work item of a cancelled or ended run is in any agent's or person's get_work",
     "spec §3.5; tools.md get_work"),
    ("end.failed", "a failed decision ends the run failed, the step failed with its note, no work left open",
     "spec §3.4; spec §3.5"),
    ("end.rejected", "a rejection without on_reject ends the run rejected, the note in ended",
     "spec §3.2; spec §3.5"),
])
def ending(context, rec):
    agent = context.agent
    context.need_process(PROCESS)
    _, operator = context.person(operator=True)
    ended: list[str] = []
    run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-cancel"})["run"]["id"]
    claimed = claim(context, agent, run_id, "diagnose")
    reason = "Opened twice by mistake."
    with rec.check("end.cancel_forbidden"):
        agent.fails("cancel", "forbidden", runId=run_id, reason=reason)
        _, plain = context.person(operator=False)
        plain.fails("cancel", "forbidden", runId=run_id, reason=reason)
        assert agent.ok("get_run", runId=run_id)["run"]["state"] == "active", "a refused cancel changed the run"
    view = operator.write("cancel", runId=run_id, reason=reason)
    ended.append(run_id)
    with rec.check("end.cancel"):
        cancelled(view, reason)
        assert state(view, "diagnose") == "cancelled", state(view, "diagnose")
        cancelled(agent.ok("get_run", runId=run_id), reason)
    with rec.check("end.tokens"):
        agent.conflict("submit", "run_ended", **acceptable(claimed["token"]))
        if context.offers("renew"):
            agent.conflict("renew", "run_ended", token=claimed["token"])
        agent.conflict("escalate", "run_ended", token=claimed["token"], note="Cannot finish.")
        operator.conflict("cancel", "run_ended", runId=run_id, reason="Again.")
    with rec.check("end.cancel_ready"):
        ready = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-cancel-ready"})["run"]["id"]
        ended.append(ready)
        view = operator.write("cancel", runId=ready, reason=reason)
        cancelled(view, reason)
        assert state(view, "diagnose") == "cancelled", f"the ready step is {state(view, 'diagnose')} after the cancel"
        assert state(agent.ok("get_run", runId=ready), "diagnose") == "cancelled", "get_run shows the step uncancelled"
        agent.conflict("claim", "run_ended", runId=ready, stepId="diagnose")
    with rec.check("end.cancel_waiting"):
        waiting = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-cancel-waiting"})["run"]["id"]
        ended.append(waiting)
        view = work_agent_step(context, agent, waiting, "diagnose", output=OUTPUT, next="tier1_handoff",
                               reason="Not fixed.")
        item = item_for(view, "tier1_handoff")
        view = operator.write("cancel", runId=waiting, reason=reason)
        cancelled(view, reason)
        assert state(view, "tier1_handoff") == "cancelled", state(view, "tier1_handoff")
        assert agent.ok("get_run", runId=waiting)["workItems"] == [], "get_run still shows an open work item"
        operator.conflict("decide", "run_ended", **{k: v for k, v in item["decide"]["arguments"].items()
                                                    if k != "requestId"}, decision="failed", note="Too late.")
    with rec.check("end.failed"):
        _, lead = context.person(role="tier1-lead")
        run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-failed"})["run"]["id"]
        ended.append(run_id)
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
        ended.append(view["run"]["id"])
        note = "The customer did not authenticate."
        view = decide(owner, item_for(view, "authorize"), "rejected", note=note)
        run = view["run"]
        assert (run["state"], run["outcome"]) == ("ended", "rejected"), run
        assert run["ended"]["note"] == note and run["ended"]["by"] == view["data"]["steps"]["authorize"]["by"], run["ended"]
        assert not [s["id"] for s in view["steps"] if s["state"] in UNFINISHED] and view["workItems"] == []
    with rec.check("end.get_work"):
        listed = listed_anywhere(context, set(ended))
        assert not listed, "; ".join(listed)


def cancelled(view: dict, reason: str) -> None:
    """Assert the run view is of a run cancelled with reason: no step unfinished, no work item open."""
    run = view["run"]
    assert (run["state"], run["outcome"]) == ("cancelled", None), run
    assert run["ended"] and run["ended"]["note"] == reason and run["ended"]["by"], run["ended"]
    unfinished = [f"{s['id']} {s['state']}" for s in view["steps"] if s["state"] in UNFINISHED]
    assert not unfinished, f"steps left unfinished: {', '.join(unfinished)}"
    assert view["workItems"] == [], f"work items left open: {[item['stepId'] for item in view['workItems']]}"
