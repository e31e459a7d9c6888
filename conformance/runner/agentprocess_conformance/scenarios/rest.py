"""The REST form of the tools, where the server has one: the same answers as over MCP (spec §4)."""

from __future__ import annotations

from ..flows import claim, start, submit
from ..framework import Skip, section
from .agents import OUTPUT, PROCESS


def without_links(view: dict) -> dict:
    """The run view less the file `url`s, which are short-lived and may differ between two reads."""
    copy = {**view, "data": {**view["data"], "steps": {}}}
    for step_id, record in view["data"]["steps"].items():
        record = dict(record)
        if "evidence" in record:
            record["evidence"] = [{k: v for k, v in item.items() if k != "url"} for item in record["evidence"]]
        copy["data"]["steps"][step_id] = record
    return copy


@section("rest", "REST form of the tools", "spec §4; tools.md", [
    ("rest.describe", "describe over REST is the same as over MCP", "spec §4.1"),
    ("rest.get_run", "a run started over MCP reads the same over REST", "spec §4"),
    ("rest.errors", "a refusal over REST is the same envelope as over MCP", "spec §4.3; tools.md"),
    ("rest.loop", "an agent works a step over REST: start_run, claim, submit", "spec §3.3"),
])
def rest(context, rec):
    if context.rest_agent is None:
        raise Skip("no REST form of the tools was given (rest in the configuration, or --rest)")
    over_rest, over_mcp = context.rest_agent, context.agent
    context.need_process(PROCESS)
    with rec.check("rest.describe"):
        assert over_rest.ok("describe") == over_mcp.ok("describe"), "describe differs between the doors"
    run_id = start(context, over_mcp, PROCESS, inputs={"ticketId": "T-conformance-rest"})["run"]["id"]
    with rec.check("rest.get_run"):
        assert without_links(over_rest.ok("get_run", runId=run_id)) == without_links(over_mcp.ok("get_run", runId=run_id))
    with rec.check("rest.errors"):
        missing = run_id + "999999"
        assert over_rest.call("get_run", runId=missing).body == over_mcp.call("get_run", runId=missing).body
    with rec.check("rest.loop"):
        view = start(context, over_rest, PROCESS, inputs={"ticketId": "T-conformance-rest-2"})
        claimed = claim(context, over_rest, view["run"]["id"], "diagnose")
        done = submit(context, over_rest, claimed, output=OUTPUT, next="tier1_handoff", reason="Not fixed.")
        assert done["data"]["steps"]["diagnose"]["output"] == OUTPUT
