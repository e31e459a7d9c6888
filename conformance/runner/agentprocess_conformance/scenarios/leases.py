"""Leases ending: the step is claimable at once, the handoff tells the next agent, old tokens are stale
(spec §3.3, §6 rule 2). These checks wait out one lease, so they need a server whose `leaseSeconds` fits
within `--max-wait` (the reference server: LEASE_SECONDS=5).
"""

from __future__ import annotations

import datetime as dt
import time

from ..calls import request_id
from ..flows import agent_item, claim, need_wait, parse_time, start
from ..framework import section
from .agents import PROCESS, acceptable

PROGRESS = "Read the ticket; the logs are next."
MARGIN_SECONDS = 1.0


@section("leases", "Leases and handoff", "spec §3.3; spec §6 rule 2", [
    ("lease.expiry", "when a lease ends the step is claimable at once, the last progress note in the handoff",
     "spec §3.3"),
    ("lease.issues_handoff", "the issues of the refused submission travel in the same handoff", "spec §3.3"),
    ("lease.stale", "the expired token is stale on submit and renew", "spec §6 rule 2; tools.md renew"),
    ("lease.replay", "a replayed claim returns the original token even after its lease ended", "spec §3.3"),
])
def leases(context, rec):
    context.need_process(PROCESS)
    context.need_tool("renew")
    second = context.second_agent()
    need_wait(context, context.lease_seconds + MARGIN_SECONDS,
              f"outliving a lease of {context.lease_seconds:.0f} s (describe.leaseSeconds; LEASE_SECONDS on the reference server)")
    agent = context.agent
    run_id = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-lease"})["run"]["id"]
    claim_request = request_id()
    first = claim(context, agent, run_id, "diagnose", requestId=claim_request)
    renewed = agent.write("renew", token=first["token"], progress=PROGRESS)
    context.tokens.add(renewed["token"])
    refused = agent.fails("submit", "not_accepted", token=renewed["token"], output={"diagnosis": "partial"},
                          summary="Only half done.")
    expiry = parse_time(renewed["expiresAt"])
    time.sleep(max(0.0, (expiry - dt.datetime.now(dt.UTC)).total_seconds()) + MARGIN_SECONDS)
    item = agent_item(second, run_id, "diagnose", process=PROCESS)
    taken = claim(context, second, run_id, "diagnose")
    with rec.check("lease.expiry"):
        assert item is not None, "get_work does not list the step after its lease ended"
        assert (item["handoff"] or {}).get("progress") == PROGRESS, f"get_work handoff is {item['handoff']}"
        assert (taken["handoff"] or {}).get("progress") == PROGRESS, f"claim handoff is {taken['handoff']}"
    with rec.check("lease.issues_handoff"):
        assert (taken["handoff"] or {}).get("issues") == refused.get("issues"), \
            f"handoff issues {(taken['handoff'] or {}).get('issues')}, refused with {refused.get('issues')}"
    with rec.check("lease.stale"):
        agent.fails("submit", "stale", **acceptable(renewed["token"]))
        agent.fails("renew", "stale", token=renewed["token"])
    with rec.check("lease.replay"):
        again = agent.ok("claim", runId=run_id, stepId="diagnose", requestId=claim_request)
        assert (again["token"], again["expiresAt"]) == (first["token"], first["expiresAt"]), \
            "the replayed claim returned another token or expiry"
    second.write("submit", **acceptable(taken["token"]))
