"""The agent loop: get_work, claim, renew, upload, submit, escalate (spec §3.3, §5, §6 rules 2–4).

Runs of support-escalation: `diagnose` is an agent step with a list of routes and link evidence, then
person steps that the People section works through.
"""

from __future__ import annotations

import time

from .. import exchanges
from ..flows import (
    EXPIRY_TOLERANCE_SECONDS,
    LINK,
    SUMMARY,
    agent_item,
    claim,
    complete_task,
    decide,
    digest,
    fresh_item,
    item_for,
    lease_problem,
    pages,
    parse_time,
    person_entry,
    server_now,
    start,
    state,
    text_of,
    upload,
)
from ..framework import section

PROCESS = "support-escalation"
# How long after claiming the agent loop renews, so that now plus the lease differs from the old expiry.
RENEW_PAUSE_SECONDS = 3.0
OUTPUT = {"diagnosis": "The cache was misconfigured.", "attemptedFixes": "Cleared the cache; no change."}


def routes_of(step: dict) -> list[dict] | None:
    """The step's `next` as claim gives it: a list of routes, or null when it is not a list."""
    value = step.get("next")
    if not isinstance(value, list):
        return None
    return [{"to": route} if isinstance(route, str) else dict(route) for route in value]


def mutated(token: str) -> str:
    """The token with its last character changed: it cannot verify."""
    return token[:-1] + ("A" if token[-1:] != "A" else "B")


def acceptable(token: str, **extra) -> dict:
    return {"token": token, "output": OUTPUT, "evidence": [{"kind": "link", "ref": LINK}], "summary": SUMMARY,
            "next": "tier1_handoff", "reason": "Not fixed by the runbook.", **extra}


@section("agents", "Agent loop", "spec §3.3; tools.md", [
    ("agent.start_run_invalid", "start_run refuses missing, mistyped and undeclared inputs as invalid, naming each",
     "tools.md start_run; spec §2.3"),
    ("agent.start_run", "start_run returns the run view: the pinned version, the first step ready, the body",
     "tools.md start_run; spec §3.2"),
    ("agent.get_work", "get_work lists the ready step with the exact claim call and no handoff",
     "spec §3.3; tools.md get_work"),
    ("agent.get_work_order", "get_work is oldest first and pages with nextCursor", "tools.md get_work"),
    ("agent.list_runs", "list_runs finds the run by process, state and an input's value", "spec §4.2; tools.md list_runs"),
    ("agent.claim", "claim returns a token, its expiry (now plus the lease), the step's requirements, the body and "
     "the run data", "tools.md claim; spec §3.3"),
    ("agent.claimed_unlisted", "a claimed step is in no agent's get_work until its claim ends",
     "spec §6 rule 2; tools.md get_work"),
    ("agent.claim_conflicts", "a second claim is conflict: claimed_by_you for the holder, claimed_by_other for another",
     "tools.md claim; spec §6 rule 2"),
    ("agent.claim_refusals", "claim refuses a step not ready (not_ready), a person step (forbidden), an unknown step or run (not_found)",
     "tools.md claim; spec §4.3"),
    ("agent.forged_token", "a token that does not verify is invalid on submit, renew and escalate", "spec §4.3"),
    ("agent.renew", "renew sets the expiry to now plus the lease and returns a new token that works",
     "spec §3.3; tools.md renew"),
    ("agent.renew_old_token", "after renew the old token stops working at once: submit, renew and escalate refuse it",
     "spec §3.3; tools.md renew; spec §6 rule 2"),
    ("agent.not_accepted", "a refused submission names every issue at once and changes nothing",
     "spec §6 rule 3; tools.md submit"),
    ("agent.token_private", "no claim token ever appears in get_run", "spec §6 rule 2"),
    ("agent.upload", "upload stores the bytes and answers their id, sha256 and size", "tools.md upload; spec §5"),
    ("agent.submit", "an accepted submission records output, evidence, summary, route, reason, by and at",
     "spec §3.1; spec §3.2"),
    ("agent.transitions", "the submit's run view already shows the next step's work item; a person step is in no "
     "agent's get_work", "spec §4; tools.md get_work"),
    ("agent.file_evidence", "file evidence in run data carries its sha256 and a url that serves the bytes", "spec §5"),
    ("agent.escalate", "escalate hands the step to a person: the step waits, a work item carries the note",
     "spec §3.3; tools.md escalate"),
    ("agent.escalate_ends_claim", "after escalating, the agent's token is stale and the step is in no agent's get_work",
     "tools.md escalate; spec §3.3; spec §6 rule 2"),
    ("agent.decide_forbidden", "decide from an agent identity is forbidden", "spec §6 rule 4"),
    ("agent.escalation_queue", "an operator finds the escalation in get_work; a person outside it may not decide",
     "spec §3.3; spec §3.4"),
    ("agent.returned", "returned makes the step ready again, with the note in the next handoff",
     "spec §3.4; tools.md get_work"),
    ("agent.escalation_completed", "a person completes an escalated step in the agent's place", "spec §3.4"),
])
def agent_loop(context, rec):
    context.need_process(PROCESS)
    run_id, second, view = starting(context, rec)
    claimed, claim_sent, claimed_at = claiming(context, rec, run_id, view)
    token = renewing(context, rec, claimed, claim_sent, claimed_at)
    refusing(context, rec, run_id, token)
    handing_in(context, rec, run_id, token)
    escalation(context, rec, second)


def starting(context, rec) -> tuple[str, str, dict]:
    """Start two runs; check start_run, get_work and list_runs. Return both run ids and the first view."""
    agent, fixture = context.agent, context.fixtures[PROCESS]
    version = context.processes[PROCESS]["version"]
    with rec.check("agent.start_run_invalid"):
        missing = agent.fails("start_run", "invalid", process=PROCESS, inputs={"priority": "high"})
        issues = " ".join(missing.get("issues") or [])
        assert "ticketId" in issues and "priority" in issues, f"issues do not name ticketId and priority: {missing.get('issues')}"
        mistyped = agent.fails("start_run", "invalid", process=PROCESS, inputs={"ticketId": 42})
        assert "ticketId" in " ".join(mistyped.get("issues") or []), f"issues do not name ticketId: {mistyped.get('issues')}"
    view = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-1"})
    run_id = view["run"]["id"]
    with rec.check("agent.start_run"):
        run = view["run"]
        assert run["process"] == PROCESS and run["version"] == version, (run["process"], run["version"], version)
        assert (run["mode"], run["state"], run["outcome"], run["ended"]) == ("live", "active", None, None), run
        assert view["data"] == {"inputs": {"ticketId": "T-conformance-1"}, "steps": {}}, view["data"]
        assert [step["id"] for step in view["steps"]] == list(fixture.steps), [step["id"] for step in view["steps"]]
        assert {step["id"]: step["state"] for step in view["steps"]} == {
            step_id: ("ready" if step_id == "diagnose" else None) for step_id in fixture.steps
        }
        assert view["body"] == fixture.body, "the body is not the process body exactly as written"
        assert view["workItems"] == []
    with rec.check("agent.get_work"):
        item = agent_item(agent, run_id, "diagnose", process=PROCESS)
        assert item is not None, "get_work does not list the ready step"
        assert (item["process"], item["version"], item["mode"], item["handoff"]) == (PROCESS, version, "live", None), item
        call = item["claim"]
        assert call["tool"] == "claim" and call["arguments"]["runId"] == run_id, call
        assert call["arguments"]["stepId"] == "diagnose" and "requestId" in call["arguments"], call
    second = start(context, agent, PROCESS, inputs={"ticketId": "T-conformance-2"})["run"]["id"]
    with rec.check("agent.get_work_order"):
        items = list(pages(agent, "get_work", limit=1, process=PROCESS))
        keys = [(item["runId"], item["stepId"]) for item in items]
        assert len(keys) == len(set(keys)), "a step is listed twice across pages"
        assert (run_id, "diagnose") in keys and (second, "diagnose") in keys, "a ready step is missing from the pages"
        assert keys.index((run_id, "diagnose")) < keys.index((second, "diagnose")), "the older run comes later"
        moments = [parse_time(item["readySince"]) for item in items]
        assert moments == sorted(moments), "readySince is not ascending"
    with rec.check("agent.list_runs"):
        context.need_tool("list_runs")
        found = list(pages(agent, "list_runs", process=PROCESS, state="active", inputs={"ticketId": "T-conformance-1"}))
        assert [item["id"] for item in found if item["id"] in (run_id, second)] == [run_id], found
        item = next(item for item in found if item["id"] == run_id)
        assert (item["process"], item["version"], item["state"]) == (PROCESS, version, "active"), item
        assert item["inputs"] == {"ticketId": "T-conformance-1"}, item["inputs"]
    return run_id, second, view


def claiming(context, rec, run_id: str, view: dict) -> tuple[dict, float, float]:
    """Claim the first run's step; check the claim, its conflicts and refusals, and forged tokens.

    Return the claim, when it was sent and when its answer came (time.monotonic()).
    """
    agent, fixture = context.agent, context.fixtures[PROCESS]
    claim_sent = time.monotonic()
    claimed = claim(context, agent, run_id, "diagnose")
    served, claimed_at = server_now(), time.monotonic()
    with rec.check("agent.claim"):
        step = fixture.steps["diagnose"]
        expected = {"id": "diagnose", "instructions": step["agent"], "output": step["output"],
                    "evidence": step["evidence"], "next": routes_of(step)}
        assert claimed["step"] == expected, f"step is {claimed['step']}"
        assert claimed["body"] == fixture.body and claimed["data"] == view["data"]
        assert claimed["handoff"] is None and claimed["mode"] == "live"
        problem = lease_problem(claimed["expiresAt"], context.lease_seconds, served)
        assert problem is None, problem
    with rec.check("agent.claimed_unlisted"):
        listed = [caller.name for caller in context.agents if agent_item(caller, run_id, "diagnose", process=PROCESS)]
        assert not listed, f"get_work of {', '.join(listed)} lists the claimed step"
    with rec.check("agent.claim_conflicts"):
        agent.conflict("claim", "claimed_by_you", runId=run_id, stepId="diagnose")
        context.second_agent().conflict("claim", "claimed_by_other", runId=run_id, stepId="diagnose")
    with rec.check("agent.claim_refusals"):
        agent.conflict("claim", "not_ready", runId=run_id, stepId="close_ticket")
        agent.fails("claim", "forbidden", runId=run_id, stepId="tier1_handoff")
        agent.fails("claim", "not_found", runId=run_id, stepId="no_such_step")
        agent.fails("claim", "not_found", runId=run_id + "999999", stepId="diagnose")
    with rec.check("agent.forged_token"):
        forged = mutated(claimed["token"])
        agent.fails("submit", "invalid", **acceptable(forged))
        agent.fails("escalate", "invalid", token=forged, note="Cannot finish.")
        if context.offers("renew"):
            agent.fails("renew", "invalid", token=forged)
    return claimed, claim_sent, claimed_at


def renewing(context, rec, claimed: dict, claim_sent: float, claimed_at: float) -> str:
    """Renew the claim with progress a few seconds after claiming; return the token to go on with.

    The wait tells "now plus the lease" from "the old expiry": the new expiry must have moved on by the
    time between the two calls (measured here, so the clocks of runner and server need not agree).
    """
    agent = context.agent
    token, renewed = claimed["token"], None
    with rec.check("agent.renew"):
        context.need_tool("renew")
        pause = min(RENEW_PAUSE_SECONDS, context.lease_seconds / 3)
        time.sleep(max(0.0, claimed_at + pause - time.monotonic()))
        before = time.monotonic()
        renewed = agent.write("renew", token=token, progress="Read the ticket and the logs.")
        served, after = server_now(), time.monotonic()
        context.tokens.add(renewed["token"])
        token = renewed["token"]
        # The new token works: renewing with it answers another (and the loop goes on with that one).
        again = agent.write("renew", token=renewed["token"])
        context.tokens.add(again["token"])
        token = again["token"]
        assert renewed["token"] != claimed["token"], "renew returned the same token"
        moved = (parse_time(renewed["expiresAt"]) - parse_time(claimed["expiresAt"])).total_seconds()
        assert before - claimed_at - EXPIRY_TOLERANCE_SECONDS <= moved <= after - claim_sent + EXPIRY_TOLERANCE_SECONDS, (
            f"renewed {before - claimed_at:.1f} s after the claim, the expiry moved {moved:.1f} s "
            f"({claimed['expiresAt']} → {renewed['expiresAt']}): it is not now plus the lease")
        problem = lease_problem(renewed["expiresAt"], context.lease_seconds, served)
        assert problem is None, problem
    if renewed is None:
        rec.skip("agent.renew_old_token", "renew did not answer a new token (agent.renew)")
        return token
    with rec.check("agent.renew_old_token"):
        agent.fails("submit", "stale", **acceptable(claimed["token"]))
        agent.fails("renew", "stale", token=claimed["token"])
        agent.fails("escalate", "stale", token=claimed["token"], note="Cannot finish.")
        agent.fails("renew", "stale", token=renewed["token"])
    return token


def refusing(context, rec, run_id: str, token: str) -> None:
    """Submit everything wrong at once; check the refusal, that nothing changed and that no token shows."""
    agent = context.agent
    with rec.check("agent.not_accepted"):
        error = agent.fails("submit", "not_accepted", token=token, output={"diagnosis": 42, "surprise": "x"},
                            evidence=[{"kind": "file", "ref": "f_conformance_missing"}], summary="")
        issues = error.get("issues") or []
        named = ("summary", "output.diagnosis", "output.attemptedFixes", "output.surprise", "link",
                 "f_conformance_missing", "next", "reason")
        unnamed = [name for name in named if not any(name in issue for issue in issues)]
        assert not unnamed, f"no issue names {', '.join(unnamed)}: {issues}"
        after = agent.ok("get_run", runId=run_id)
        assert after["data"]["steps"] == {} and state(after, "diagnose") == "claimed", "the refusal changed the run"
    with rec.check("agent.token_private"):
        text = text_of(agent.ok("get_run", runId=run_id))
        assert not [found for found in context.tokens if found in text], "get_run shows a claim token"


def handing_in(context, rec, run_id: str, token: str) -> None:
    """Upload a file and submit with link and file evidence; check what run data records."""
    agent = context.agent
    content = b"conformance evidence for " + run_id.encode()
    uploaded = None
    with rec.check("agent.upload"):
        uploaded = upload(agent, content, "diagnosis.txt")
        assert uploaded["id"] and uploaded["bytes"] == len(content), uploaded
        assert uploaded["sha256"] == digest(content), f"sha256 {uploaded['sha256']}, expected {digest(content)}"
    uploaded = uploaded or upload(agent, content, "diagnosis.txt")
    evidence = [{"kind": "link", "ref": LINK}, {"kind": "file", "ref": uploaded["id"]}]
    done = agent.write("submit", **acceptable(token, evidence=evidence))
    record = done["data"]["steps"].get("diagnose") or {}
    with rec.check("agent.submit"):
        assert record.get("output") == OUTPUT and record.get("summary") == SUMMARY, record
        assert (record.get("next"), record.get("reason")) == ("tier1_handoff", "Not fixed by the runbook."), record
        assert record.get("by") == done["run"]["startedBy"], f"by is {record.get('by')}, the agent is {done['run']['startedBy']}"
        assert record.get("at") and record.get("history") == [], record
        assert record["evidence"][0] == {"kind": "link", "ref": LINK}, record["evidence"]
        assert state(done, "diagnose") == "done"
    with rec.check("agent.transitions"):
        assert state(done, "tier1_handoff") == "waiting" and done["run"]["state"] == "waiting"
        item_for(done, "tier1_handoff")
        listed = [caller.name for caller in context.agents if agent_item(caller, run_id, "tier1_handoff")]
        assert not listed, f"get_work of {', '.join(listed)} lists the person step"
    with rec.check("agent.file_evidence"):
        item = record["evidence"][1]
        assert (item["kind"], item["ref"], item.get("sha256")) == ("file", uploaded["id"], uploaded["sha256"]), item
        got = exchanges.session().get(item["url"], timeout=30)
        assert got.status_code == 200, f"the file url answered {got.status_code}"
        assert got.content == content, "the file url serves other bytes"


def escalation(context, rec, run_id: str) -> None:
    """Escalate the second run's step, have an operator return it, escalate again, have them complete it."""
    agent = context.agent
    claimed = claim(context, agent, run_id, "diagnose")
    note = "The logs in the ticket cannot be read."
    view = agent.write("escalate", token=claimed["token"], note=note)
    item = None
    with rec.check("agent.escalate"):
        assert state(view, "diagnose") == "waiting" and view["run"]["state"] == "waiting"
        item = item_for(view, "diagnose")
        assert item["kind"] == "agent" and item["escalation"]["note"] == note, item["escalation"]
        assert item["escalation"]["by"] == view["run"]["startedBy"], item["escalation"]
        assert item["decide"]["decisions"] == ["returned", "completed", "failed"], item["decide"]["decisions"]
    item = item or item_for(view, "diagnose")
    with rec.check("agent.escalate_ends_claim"):
        agent.fails("submit", "stale", **acceptable(claimed["token"]))
        if context.offers("renew"):
            agent.fails("renew", "stale", token=claimed["token"])
        listed = [caller.name for caller in context.agents if agent_item(caller, run_id, "diagnose", process=PROCESS)]
        assert not listed, f"get_work of {', '.join(listed)} lists the escalated step"
    with rec.check("agent.decide_forbidden"):
        agent.fails("decide", "forbidden", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                    decision="returned", note="Try again.")
    _, operator = context.person(operator=True)
    with rec.check("agent.escalation_queue"):
        assert person_entry(operator, run_id, "diagnose"), "the operator's get_work does not list the escalation"
        _, plain = context.person(operator=False)
        plain.fails("decide", "forbidden", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                    decision="returned", note="Not mine to return.")
    returned_note = "The readable logs are attached to the ticket now."
    view = decide(operator, fresh_item(operator, run_id, "diagnose"), "returned", note=returned_note)
    with rec.check("agent.returned"):
        assert state(view, "diagnose") == "ready", state(view, "diagnose")
        listed = agent_item(agent, run_id, "diagnose", process=PROCESS)
        assert listed and (listed["handoff"] or {}).get("returned", {}).get("note") == returned_note, listed
        again = claim(context, agent, run_id, "diagnose")
        returned = (again["handoff"] or {}).get("returned") or {}
        assert returned.get("note") == returned_note and returned.get("by") and returned.get("at"), again["handoff"]
        agent.write("escalate", token=again["token"], note="Still cannot read them.")
    with rec.check("agent.escalation_completed"):
        view = complete_task(context, operator, fresh_item(operator, run_id, "diagnose"), output=OUTPUT,
                             next="tier1_handoff", reason="Read the logs myself.")
        assert state(view, "diagnose") == "done" and state(view, "tier1_handoff") == "waiting"
        record = view["data"]["steps"]["diagnose"]
        assert record["output"] == OUTPUT and record["by"] != view["run"]["startedBy"], record

