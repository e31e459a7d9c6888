"""Two organizations see nothing of each other (spec §4.1 "in the organization", §4.3 not_found)."""

from __future__ import annotations

from ..calls import request_id
from ..flows import LINK, SUMMARY, claim, item_for, pages, start, state, text_of, upload
from ..framework import Skip, section
from .agents import OUTPUT, PROCESS, acceptable


@section("isolation", "Isolation between organizations", "spec §4.1; spec §4.3", [
    ("iso.reads", "another organization's agent gets not_found for the run", "spec §4.1; spec §4.3"),
    ("iso.writes", "another organization's agent cannot claim, send events to, or submit into the run",
     "spec §4.3; spec §6 rule 2"),
    ("iso.lists", "the run and its steps appear in none of the other organization's lists", "spec §4.1"),
    ("iso.request_ids", "a requestId is scoped to its organization: the same one works in both", "spec §4"),
    ("iso.files", "a file uploaded in another organization is not evidence here", "spec §5"),
    ("iso.people", "a person of another organization, even an operator, cannot decide or cancel here",
     "spec §4.3; spec §3.4"),
])
def isolation(context, rec):
    agent = context.agent
    outsider = context.other_org_agent()
    context.need_process(PROCESS)
    run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-isolation"})["run"]["id"]
    with rec.check("iso.reads"):
        outsider.fails("get_run", "not_found", runId=run_id)
    claimed = claim(context, agent, run_id, "diagnose")
    with rec.check("iso.writes"):
        outsider.fails("claim", "not_found", runId=run_id, stepId="diagnose")
        outsider.fails("send_event", "not_found", runId=run_id, name="settled")
        refused = outsider.call("submit", **acceptable(claimed["token"], requestId=request_id()))
        assert not refused.ok, "another organization's agent submitted into the run"
        after = agent.ok("get_run", runId=run_id)
        assert state(after, "diagnose") == "claimed" and after["data"]["steps"] == {}, "the outsider changed the run"
    with rec.check("iso.lists"):
        listed = text_of(list(pages(outsider, "get_work")))
        assert run_id not in listed, "the other organization's get_work lists the run"
        if context.offers("list_runs"):
            runs = [item["id"] for item in pages(outsider, "list_runs")]
            assert run_id not in runs, "the other organization's list_runs lists the run"
    shared = request_id()
    mine = None
    with rec.check("iso.request_ids"):
        mine = agent.ok("upload", fileName="mine.txt", contentType="text/plain", contentBase64="bWluZQ==",
                        requestId=shared)
        theirs = outsider.ok("upload", fileName="theirs.txt", contentType="text/plain", contentBase64="dGhlaXJz",
                             requestId=shared)
        assert theirs["id"] != mine["id"], "both organizations got the same file"
    with rec.check("iso.files"):
        foreign = upload(outsider, b"another organization's file")
        error = agent.fails("submit", "not_accepted", token=claimed["token"], output=OUTPUT,
                            evidence=[{"kind": "link", "ref": LINK}, {"kind": "file", "ref": foreign["id"]}],
                            summary=SUMMARY, next="tier1_handoff", reason="Not fixed.")
        assert any(foreign["id"] in issue for issue in error.get("issues") or []), error.get("issues")
    with rec.check("iso.people"):
        people(context, run_id, claimed)


def people(context, run_id: str, claimed: dict) -> None:
    if context.other_person is None:
        raise Skip("needs a person of the other organization (other_organization.people)")
    _, foreigner = context.other_person
    view = context.agent.write("submit", **acceptable(claimed["token"]))
    item = item_for(view, "tier1_handoff")
    arguments = {k: v for k, v in item["decide"]["arguments"].items() if k != "requestId"}
    foreigner.fails("decide", "not_found", **arguments, decision="failed", note="Mine now.")
    foreigner.fails("cancel", "not_found", runId=run_id, reason="Mine now.")
    foreigner.fails("get_run", "not_found", runId=run_id)
    assert state(context.agent.ok("get_run", runId=run_id), "tier1_handoff") == "waiting", "the run changed"

