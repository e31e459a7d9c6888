"""The parallel-1 profile: fork, join, rework of a branch and of the whole region (profiles/parallel.md §3)."""

import pytest

from processes.capabilities import enabled_profiles
from tests.runs.conftest import rid, step_state

BRANCH_REWORK = """---
name: branch-rework
description: Two branches; one has its own review that can send it back.
steps:
  - id: fork
    parallel: [left, right]
    next: done
  - id: left
    agent: Left work.
    output: { text: string }
    next: left_review
  - id: left_review
    person: reviewers
    approve: Review the left work.
    on_reject: left
    next: join
  - id: right
    agent: Right work.
    next: join
  - id: done
    finish: ok
---
"""


@pytest.fixture
def incident(publish, person_caller):
    publish("major-incident")
    people = {
        "ops": person_caller("ops@example.com", groups=["operations-lead"]),
        "sec": person_caller("sec@example.com", groups=["security-lead"]),
        "comms": person_caller("comms@example.com", groups=["communications-lead"]),
        "commander": person_caller("cmd@example.com"),
    }
    return people


def items_of(view):
    return {item["stepId"]: item for item in view["workItems"]}


def test_parallel_1_is_offered():
    assert "parallel-1" in enabled_profiles()


def test_fork_makes_every_entry_ready_in_one_write_and_the_join_moves_on(incident, agent):
    # parallel-1 §3 Fork, Join, §4 run view
    run_to_review(incident, agent)


def run_to_review(incident, agent):
    """Start major-incident, have three people complete their branches at once, return the review."""
    run_id = agent.write("start_run", process="major-incident",
                         inputs={"incidentId": "INC-1", "commander": "cmd@example.com"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="activate")["token"]
    view = agent.write("submit", token=token, output={"bridge": "bridge-7"}, summary="Bridge open.")
    respond = next(s for s in view["steps"] if s["id"] == "respond")
    assert respond == {"id": "respond", "kind": "parallel", "state": "waiting"}
    items = items_of(view)
    assert set(items) == {"operations", "security", "communications"}
    assert all(items[s]["due"] for s in items) and len({items[s]["due"] for s in items}) == 1
    assert view["run"]["state"] == "waiting"
    outputs = {"operations": "recoverySummary", "security": "containmentSummary",
               "communications": "communicationsSummary"}
    # Three people work at once; every sibling completion stales the others' snapshots (§3 Snapshots).
    for person, step_id in (("ops", "operations"), ("sec", "security")):
        caller = incident[person]
        [entry] = caller("get_work")["items"]
        item = entry["workItem"]
        view = caller.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                            decision="completed", output={outputs[step_id]: "done"},
                            evidence=[{"kind": "link", "ref": "https://status/1"}])
        assert step_state(view, step_id) == "done" and step_state(view, "respond") == "waiting"
        assert step_state(view, "close_review") is None
    stale_item = items["communications"]
    comms = incident["comms"]
    comms.fails("decide", "stale", runId=run_id, workItemId=stale_item["id"], snapshot=stale_item["snapshot"],
                decision="completed", output={"communicationsSummary": "sent"},
                evidence=[{"kind": "link", "ref": "https://status/2"}], requestId=rid())
    fresh = items_of(comms("get_run", runId=run_id))["communications"]
    view = comms.write("decide", runId=run_id, workItemId=fresh["id"], snapshot=fresh["snapshot"],
                       decision="completed", output={"communicationsSummary": "sent"},
                       evidence=[{"kind": "link", "ref": "https://status/2"}])
    # The last branch's completion joins and makes close_review ready in the same write.
    assert step_state(view, "respond") == "done" and step_state(view, "close_review") == "waiting"
    assert "respond" not in view["data"]["steps"]  # a parallel step records nothing
    [review] = view["workItems"]
    assert review["assignedTo"] == {"person": "cmd@example.com"}
    return run_id, review


def test_rejection_after_the_join_reopens_every_branch(incident, agent):
    # parallel-1 §3 Rework: every branch step's completion moves to history; every entry ready again
    run_id, review = run_to_review(incident, agent)
    commander = incident["commander"]
    view = commander.write("decide", runId=run_id, workItemId=review["id"], snapshot=review["snapshot"],
                           decision="rejected", note="Security containment is not evidenced.")
    assert step_state(view, "respond") == "waiting"
    for step_id in ("operations", "security", "communications"):
        assert step_state(view, step_id) == "waiting"
        record = view["data"]["steps"][step_id]
        assert set(record) == {"history"} and len(record["history"]) == 1
    assert view["data"]["steps"]["close_review"]["note"] == "Security containment is not evidenced."
    assert view["data"]["steps"]["activate"]["output"] == {"bridge": "bridge-7"}
    assert set(items_of(view)) == {"operations", "security", "communications"}
    # Finish the second round and approve.
    outputs = {"ops": ("operations", "recoverySummary"), "sec": ("security", "containmentSummary"),
               "comms": ("communications", "communicationsSummary")}
    for person, (step_id, field) in outputs.items():
        caller = incident[person]
        item = items_of(caller("get_run", runId=run_id))[step_id]
        caller.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="completed",
                     output={field: "round two"}, evidence=[{"kind": "link", "ref": "https://status/3"}])
    review = items_of(commander("get_run", runId=run_id))["close_review"]
    view = commander.write("decide", runId=run_id, workItemId=review["id"], snapshot=review["snapshot"],
                           decision="approved")
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "stabilized"
    assert view["data"]["steps"]["close_review"]["history"][0]["decision"] == "rejected"


def test_a_failed_branch_cancels_every_sibling(incident, agent):
    # parallel-1 §3 Ending the run from a branch
    run_id = agent.write("start_run", process="major-incident",
                         inputs={"incidentId": "INC-2", "commander": "cmd@example.com"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="activate")["token"]
    agent.write("submit", token=token, output={"bridge": "b"}, summary="s")
    ops = incident["ops"]
    item = ops("get_work")["items"][0]["workItem"]
    view = ops.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="failed",
                     note="Data centre lost.")
    assert view["run"]["outcome"] == "failed" and step_state(view, "operations") == "failed"
    assert step_state(view, "security") == "cancelled" and step_state(view, "communications") == "cancelled"
    assert step_state(view, "respond") == "cancelled" and view["workItems"] == []


def test_rework_inside_a_branch_touches_no_sibling(publish, agent, person_caller):
    publish(BRANCH_REWORK)
    reviewer = person_caller("r@example.com", groups=["reviewers"])
    run_id = agent.write("start_run", process="branch-rework", inputs={})["run"]["id"]
    work = {i["stepId"] for i in agent("get_work")["items"]}
    assert work == {"left", "right"}
    right = agent.write("claim", runId=run_id, stepId="right")["token"]
    agent.write("submit", token=right, output={}, summary="Right done.")
    left = agent.write("claim", runId=run_id, stepId="left")["token"]
    view = agent.write("submit", token=left, output={"text": "v1"}, summary="Left done.")
    [item] = view["workItems"]
    view = reviewer.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="rejected", note="Redo left.")
    assert step_state(view, "left") == "ready" and step_state(view, "right") == "done"
    assert view["data"]["steps"]["right"]["summary"] == "Right done."
    left = agent.write("claim", runId=run_id, stepId="left")["token"]
    view = agent.write("submit", token=left, output={"text": "v2"}, summary="Left redone.")
    [item] = view["workItems"]
    view = reviewer.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="approved")
    assert view["run"]["outcome"] == "ok" and step_state(view, "fork") == "done"
