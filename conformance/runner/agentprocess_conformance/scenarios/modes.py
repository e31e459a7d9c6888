"""Test runs: every get_work item, claim and work item of a run started with mode test says so (spec §3.3)."""

from __future__ import annotations

from ..flows import agent_item, claim, item_for, person_entry, start, submit
from ..framework import section
from .agents import OUTPUT, PROCESS


@section("modes", "Test mode", "spec §3.3", [
    ("mode.run", "start_run with mode test starts a test run", "spec §3.3; tools.md start_run"),
    ("mode.get_work", "its get_work item says mode test", "spec §3.3; tools.md get_work"),
    ("mode.claim", "its claim says mode test", "spec §3.3; tools.md claim"),
    ("mode.work_item", "its work items say mode test, in the run view and in the person's get_work",
     "spec §3.3; tools.md run view"),
])
def modes(context, rec):
    agent = context.agent
    context.need_process(PROCESS)
    view = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-test"}, mode="test")
    run_id = view["run"]["id"]
    with rec.check("mode.run"):
        assert view["run"]["mode"] == "test", view["run"]["mode"]
    with rec.check("mode.get_work"):
        item = agent_item(agent, run_id, "diagnose", process=PROCESS)
        assert item is not None and item["mode"] == "test", item
    claimed = claim(context, agent, run_id, "diagnose")
    with rec.check("mode.claim"):
        assert claimed["mode"] == "test", claimed["mode"]
    view = submit(context, agent, claimed, output=OUTPUT, next="tier1_handoff", reason="Not fixed.")
    with rec.check("mode.work_item"):
        item = item_for(view, "tier1_handoff")
        assert item.get("mode") == "test", f"the work item's mode is {item.get('mode')}"
        _, lead = context.person(role="tier1-lead")
        entry = person_entry(lead, run_id, "tier1_handoff")
        assert entry is not None and entry["mode"] == "test" and entry["workItem"].get("mode") == "test", entry
