"""Every write is idempotent on its requestId (spec §4, spec §6 housekeeping rule)."""

from __future__ import annotations

from ..calls import request_id
from ..flows import claim, upload
from ..framework import section
from .agents import OUTPUT, PROCESS, acceptable

INPUTS = {"ticketId": "T-conformance-replay"}


def without_replay_flag(data: dict) -> dict:
    """The answer less `replayed`, which the run view schema lets a server add to a replayed answer."""
    return {key: value for key, value in data.items() if key != "replayed"}


@section("idempotency", "Idempotency", "spec §4", [
    ("idem.start_run", "start_run again with the same requestId and arguments returns the original run",
     "spec §4"),
    ("idem.claim", "a replayed claim returns the original token", "spec §3.3; spec §4"),
    ("idem.submit", "a replayed submit returns the original result and completes nothing twice", "spec §4"),
    ("idem.upload", "a replayed upload returns the original file", "spec §4"),
    ("idem.conflict", "the same requestId with other arguments is conflict", "spec §4; spec §4.3"),
    ("idem.failed_not_recorded", "a call that failed is not recorded: a retry with its requestId can succeed",
     "spec §4"),
])
def idempotency(context, rec):
    agent = context.agent
    context.need_process(PROCESS)
    start_request = request_id()
    first = agent.ok("start_run", process=PROCESS, inputs=INPUTS, requestId=start_request)
    run_id = first["run"]["id"]
    context.runs.add(run_id)
    with rec.check("idem.start_run"):
        again = agent.ok("start_run", process=PROCESS, inputs=INPUTS, requestId=start_request)
        assert without_replay_flag(again) == without_replay_flag(first), "the replay answered another run view"
    claim_request = request_id()
    claimed = claim(context, agent, run_id, "diagnose", requestId=claim_request)
    with rec.check("idem.claim"):
        again = agent.ok("claim", runId=run_id, stepId="diagnose", requestId=claim_request)
        assert again["token"] == claimed["token"], "the replayed claim returned another token"
    submit_request = request_id()
    done = agent.ok("submit", **acceptable(claimed["token"], requestId=submit_request))
    with rec.check("idem.submit"):
        again = agent.ok("submit", **acceptable(claimed["token"], requestId=submit_request))
        assert again["run"] == done["run"] and again["data"]["steps"]["diagnose"]["output"] == OUTPUT
        record = agent.ok("get_run", runId=run_id)["data"]["steps"]["diagnose"]
        assert record.get("history") == [], f"the replay completed the step again: {record.get('history')}"
    with rec.check("idem.upload"):
        upload_request = request_id()
        stored = agent.ok("upload", fileName="a.txt", contentType="text/plain", contentBase64="YWJj",
                          requestId=upload_request)
        again = agent.ok("upload", fileName="a.txt", contentType="text/plain", contentBase64="YWJj",
                         requestId=upload_request)
        assert again == stored, f"{again} differs from {stored}"
    with rec.check("idem.conflict"):
        agent.fails("start_run", "conflict", process=PROCESS, inputs={"ticketId": "T-other"}, requestId=start_request)
    with rec.check("idem.failed_not_recorded"):
        retried = request_id()
        agent.fails("start_run", "invalid", process=PROCESS, inputs={}, requestId=retried)
        view = agent.ok("start_run", process=PROCESS, inputs=INPUTS, requestId=retried)
        context.runs.add(view["run"]["id"])
        assert view["run"]["id"] != run_id
    upload(agent)
