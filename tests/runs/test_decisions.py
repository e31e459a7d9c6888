"""Work items and decide, through the engine (spec §3.4, tools.md decide)."""

import pytest

from tests.runs.conftest import ToolCaller, rid, step_state

REVIEW = """---
name: review
description: An agent drafts, a person reviews, rejection returns to the draft.
inputs:
  owner: person
steps:
  - id: draft
    agent: Draft it.
    output:
      text: string
  - id: polish
    person: inputs.owner
    task: Polish it.
    output:
      text: string
    next: [approve_it, draft]
  - id: approve_it
    person: approvers
    approve: Approve the text.
    due: 1d
    on_reject: draft
  - id: done
    finish: approved
---
"""


@pytest.fixture
def review(publish, make_person):
    publish(REVIEW)


def drafted(agent, owner_email, text="v1"):
    view = agent.write("start_run", process="review", inputs={"owner": owner_email})
    run_id = view["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    return agent.write("submit", token=token, output={"text": text}, summary="Drafted.")


def test_a_person_step_creates_one_work_item_with_the_exact_decide_call(review, agent, person_caller):
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    assert item["stepId"] == "polish" and item["kind"] == "task" and item["text"] == "Polish it."
    assert item["output"] == {"text": "string"} and item["evidence"] is None
    assert item["next"] == [{"to": "approve_it"}, {"to": "draft"}]
    assert item["assignedTo"] == {"person": "owner@example.com"}
    assert item["decide"]["decisions"] == ["completed", "failed"]
    assert item["decide"]["arguments"]["snapshot"] == item["snapshot"]
    work = owner("get_work")
    assert [w["workItem"]["id"] for w in work["items"]] == [item["id"]]
    assert work["items"][0]["workItem"] == item


def test_decide_from_an_agent_identity_is_forbidden(review, agent, person_caller):
    # spec §6 rule 4
    person_caller("owner@example.com")
    [item] = drafted(agent, "owner@example.com")["workItems"]
    agent.fails("decide", "forbidden", runId=item["decide"]["arguments"]["runId"], workItemId=item["id"],
                snapshot=item["snapshot"], decision="completed", output={"text": "x"}, next="approve_it",
                reason="r", requestId=rid())


def test_a_person_outside_the_assignment_is_forbidden(review, agent, person_caller):
    person_caller("owner@example.com")
    stranger = person_caller("stranger@example.com")
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    stranger.fails("decide", "forbidden", runId=view["run"]["id"], workItemId=item["id"],
                   snapshot=item["snapshot"], decision="failed", note="no", requestId=rid())


def test_a_person_path_that_names_no_member_fails_the_run(review, agent):
    # spec §3.4, §3.5
    view = drafted(agent, "nobody@example.com")
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "failed"
    assert step_state(view, "polish") == "failed"
    assert view["data"]["steps"]["polish"]["by"] == "server"
    assert "nobody@example.com" in view["run"]["ended"]["note"]


def test_a_person_path_that_names_a_deactivated_member_fails_the_run(review, agent, make_person):
    # A deactivated account cannot sign in to decide, so it is no one to assign work to (accounts.members).
    from accounts.models import User

    owner = make_person("owner@example.com")
    User.objects.filter(pk=owner.user.pk).update(is_active=False)
    view = drafted(agent, "Owner@Example.com")
    assert view["run"]["outcome"] == "failed" and step_state(view, "polish") == "failed"
    assert "no active member" in view["run"]["ended"]["note"]


def test_check_order_run_ended_already_decided_not_found_stale(review, agent, person_caller):
    # tools.md decide: errors in the order checked
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    run_id = view["run"]["id"]
    [item] = view["workItems"]
    owner.fails("decide", "not_found", runId=run_id, workItemId="w_999999", snapshot=item["snapshot"],
                decision="failed", note="n", requestId=rid())
    stale = owner.fails("decide", "stale", runId=run_id, workItemId=item["id"], snapshot="0" * 64,
                        decision="completed", output={"text": "x"}, next="approve_it", reason="r", requestId=rid())
    assert stale["message"]
    owner.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="completed",
                output={"text": "v1 polished"}, next="approve_it", reason="Reads well.")
    again = owner.fails("decide", "conflict", runId=run_id, workItemId=item["id"], snapshot="0" * 64,
                        decision="failed", note="n", requestId=rid())
    assert again["issues"] == ["already_decided"]
    operator = person_caller("ops@example.com", operator=True)
    operator.write("cancel", runId=run_id, reason="No longer needed.")
    ended = owner.fails("decide", "conflict", runId=run_id, workItemId=item["id"], snapshot="0" * 64,
                        decision="failed", note="n", requestId=rid())
    assert ended["issues"] == ["run_ended"]


def test_argument_rules_of_decide(review, agent, person_caller):
    # tools.md decide: next/reason/output only with completed; note not with completed
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    base = {"runId": view["run"]["id"], "workItemId": item["id"], "snapshot": item["snapshot"]}
    error = owner.fails("decide", "invalid", decision="failed", next="draft", reason="r", output={}, requestId=rid(),
                        **base)
    assert error["issues"] == [
        "next: only with completed", "reason: only with completed", "output: only with completed",
        "note: required: say why it fails",
    ]
    error = owner.fails("decide", "invalid", decision="completed", output={"text": "x"}, next="approve_it",
                        reason="r", note="hi", requestId=rid(), **base)
    assert error["issues"] == ["note: not with completed"]
    error = owner.fails("decide", "invalid", decision="approved", requestId=rid(), **base)
    assert error["issues"] == ["decision: 'approved' is not allowed here; one of completed, failed"]
    error = owner.fails("decide", "not_accepted", decision="completed", output={"text": 3}, requestId=rid(), **base)
    assert error["issues"] == ["output.text: expected string", "next: required, one of approve_it, draft",
                               "reason: required"]



def test_a_persons_refused_task_submission_is_kept_in_the_items_handoff(review, agent, person_caller):
    # spec §3.3 Handoff: it holds the issues if the last submission was not accepted, for people too
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    assert item["handoff"] is None
    base = {"runId": view["run"]["id"], "workItemId": item["id"], "snapshot": item["snapshot"]}
    refused = owner.fails("decide", "not_accepted", decision="completed", output={"text": 3}, next="approve_it",
                          reason="Ready.", requestId=rid(), **base)
    [work] = owner("get_work")["items"]
    assert work["workItem"]["handoff"] == {"issues": refused["issues"]} == {"issues": ["output.text: expected string"]}
    assert work["workItem"]["snapshot"] == item["snapshot"]  # run data untouched: the form's snapshot still holds
    assert step_state(agent("get_run", runId=view["run"]["id"]), "polish") == step_state(view, "polish")
    done = owner.write("decide", decision="completed", output={"text": "v2"}, next="approve_it", reason="Ready.",
                       **base)
    assert done["data"]["steps"]["polish"]["output"] == {"text": "v2"}


def test_group_item_first_decision_wins_and_colleague_gets_already_decided(review, agent, person_caller):
    owner = person_caller("owner@example.com")
    alice = person_caller("alice@example.com", groups=["approvers"])
    bob = person_caller("bob@example.com", groups=["approvers"])
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    view = owner.write("decide", runId=view["run"]["id"], workItemId=item["id"], snapshot=item["snapshot"],
                       decision="completed", output={"text": "v1+"}, next="approve_it", reason="ok")
    [approval] = view["workItems"]
    assert approval["assignedTo"]["group"].startswith("g_") and approval["output"] is None
    assert approval["decide"]["decisions"] == ["approved", "rejected", "failed"]
    assert [w["workItem"]["id"] for w in bob("get_work")["items"]] == [approval["id"]]
    alice.write("decide", runId=view["run"]["id"], workItemId=approval["id"], snapshot=approval["snapshot"],
                decision="rejected", note="Redo it.")
    late = bob.fails("decide", "conflict", runId=view["run"]["id"], workItemId=approval["id"],
                     snapshot=approval["snapshot"], decision="approved", requestId=rid())
    assert late["issues"] == ["already_decided"]


def test_rejection_rewinds_into_on_reject_and_keeps_the_note_current(review, agent, person_caller):
    # spec §3.1: completions after the returned-to step move to history; the rejecting approval keeps its note
    owner = person_caller("owner@example.com")
    alice = person_caller("alice@example.com", groups=["approvers"])
    view = drafted(agent, "owner@example.com")
    run_id = view["run"]["id"]
    [item] = view["workItems"]
    view = owner.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                       decision="completed", output={"text": "v1+"}, next="approve_it", reason="ok")
    [approval] = view["workItems"]
    view = alice.write("decide", runId=run_id, workItemId=approval["id"], snapshot=approval["snapshot"],
                       decision="rejected", note="Too long.")
    steps = view["data"]["steps"]
    assert steps["approve_it"]["decision"] == "rejected" and steps["approve_it"]["note"] == "Too long."
    assert steps["polish"] == {"history": [steps["polish"]["history"][0]]}
    assert steps["polish"]["history"][0]["output"] == {"text": "v1+"}
    assert steps["draft"]["output"] == {"text": "v1"}  # the returned-to step keeps its value until done again
    assert step_state(view, "draft") == "ready" and step_state(view, "polish") is None
    assert view["workItems"] == []
    claimed = agent.write("claim", runId=run_id, stepId="draft")
    assert claimed["handoff"] is None  # rework is a fresh attempt
    assert claimed["data"]["steps"]["approve_it"]["note"] == "Too long."
    view = agent.write("submit", token=claimed["token"], output={"text": "v2"}, summary="Shorter.")
    draft = view["data"]["steps"]["draft"]
    assert draft["output"] == {"text": "v2"} and [h["output"] for h in draft["history"]] == [{"text": "v1"}]
    [item] = view["workItems"]
    view = owner.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                       decision="completed", output={"text": "v2+"}, next="approve_it", reason="ok")
    [approval] = view["workItems"]
    view = alice.write("decide", runId=run_id, workItemId=approval["id"], snapshot=approval["snapshot"],
                       decision="approved")
    final = view["data"]["steps"]["approve_it"]
    assert final["decision"] == "approved" and final["history"][0]["decision"] == "rejected"
    assert view["run"]["outcome"] == "approved"


def test_rejection_without_on_reject_ends_the_run_rejected(publish, agent, person_caller):
    publish("""---
name: simple-approval
description: Approve or not.
steps:
  - id: ok
    person: approvers
    approve: Is it fine?
  - id: done
    finish: approved
---
""")
    alice = person_caller("alice@example.com", groups=["approvers"])
    view = agent.write("start_run", process="simple-approval", inputs={})
    [item] = view["workItems"]
    view = alice.write("decide", runId=view["run"]["id"], workItemId=item["id"], snapshot=item["snapshot"],
                       decision="rejected", note="Not fine.")
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "rejected"
    assert view["run"]["ended"] == {"by": alice.identity.ref, "at": view["run"]["ended"]["at"], "note": "Not fine."}


def test_failed_decision_ends_the_run_failed(review, agent, person_caller):
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    [item] = view["workItems"]
    view = owner.write("decide", runId=view["run"]["id"], workItemId=item["id"], snapshot=item["snapshot"],
                       decision="failed", note="Cannot polish this.")
    assert view["run"]["outcome"] == "failed" and step_state(view, "polish") == "failed"
    assert view["data"]["steps"]["polish"]["decision"] == "failed"
    assert step_state(view, "approve_it") is None and view["workItems"] == []


def test_initiator_steps_are_refused_for_an_agent_and_assigned_to_the_person(publish, agent, person_caller):
    # spec §3.4: a run started by an agent has no initiator
    publish("expense-reimbursement")
    error = agent.fails("start_run", "invalid", process="expense-reimbursement",
                        inputs={"claimId": "C1", "manager": "m@example.com"}, requestId=rid())
    assert "initiator" in error["message"]
    employee = person_caller("emp@example.com")
    view = employee.write("start_run", process="expense-reimbursement",
                          inputs={"claimId": "C1", "manager": "m@example.com"})
    assert view["run"]["startedBy"] == employee.identity.ref
    assert view["workItems"][0]["assignedTo"] == {"person": "emp@example.com"}


def test_escalation_goes_to_operators_who_return_or_complete_it(publish, agent, person_caller, make_agent):
    # spec §3.4: escalated agent step: returned with note, completed with output
    publish("""---
name: escalating
description: An agent may escalate.
steps:
  - id: work
    agent: Work.
    output:
      answer: string
    due: 1d
  - id: done
    finish: ok
---
""")
    operator = person_caller("ops@example.com", operator=True)
    plain = person_caller("plain@example.com")
    run_id = agent.write("start_run", process="escalating", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    view = agent.write("escalate", token=token, note="The ticket is missing.")
    assert step_state(view, "work") == "waiting" and view["run"]["state"] == "waiting"
    [item] = view["workItems"]
    assert item["kind"] == "agent" and item["escalation"]["note"] == "The ticket is missing."
    assert item["escalation"]["by"] == agent.identity.ref
    assert item["decide"]["decisions"] == ["returned", "completed", "failed"]
    agent.fails("submit", "stale", token=token, output={"answer": "a"}, summary="s", requestId=rid())
    assert plain("get_work")["items"] == []
    plain.fails("decide", "forbidden", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                decision="returned", note="n", requestId=rid())
    due_before = view["steps"][0]["due"]
    view = operator.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="returned", note="Ticket attached now.")
    assert step_state(view, "work") == "ready" and view["steps"][0]["due"] == due_before
    other = ToolCaller(make_agent("second"))
    [work] = other("get_work")["items"]
    assert work["handoff"]["returned"]["note"] == "Ticket attached now."
    claimed = other.write("claim", runId=run_id, stepId="work")
    assert claimed["handoff"]["returned"]["by"] == operator.identity.ref
    view = other.write("escalate", token=claimed["token"], note="Still stuck.")
    [item] = view["workItems"]
    view = operator.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="completed", output={"answer": "42"})
    assert view["run"]["outcome"] == "ok" and view["data"]["steps"]["work"]["by"] == operator.identity.ref


def test_cancel_by_an_operator_ends_everything(review, agent, person_caller):
    # spec §3.5
    person_caller("owner@example.com")
    operator = person_caller("ops@example.com", operator=True)
    plain = person_caller("plain@example.com")
    view = agent.write("start_run", process="review", inputs={"owner": "owner@example.com"})
    run_id = view["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    agent.fails("cancel", "forbidden", runId=run_id, reason="r", requestId=rid())
    plain.fails("cancel", "forbidden", runId=run_id, reason="r", requestId=rid())
    view = operator.write("cancel", runId=run_id, reason="Duplicate request.")
    assert view["run"]["state"] == "cancelled" and view["run"]["outcome"] is None
    assert view["run"]["ended"]["note"] == "Duplicate request." and view["run"]["ended"]["by"] == operator.identity.ref
    assert step_state(view, "draft") == "cancelled"
    for tool, args in (
        ("submit", {"token": token, "output": {"text": "t"}, "summary": "s"}),
        ("renew", {"token": token}),
        ("escalate", {"token": token, "note": "n"}),
        ("claim", {"runId": run_id, "stepId": "draft"}),
        ("cancel", {"runId": run_id, "reason": "again"}),
        ("send_event", {"runId": run_id, "name": "x"}),
    ):
        caller = operator if tool == "cancel" else agent
        assert caller.fails(tool, "conflict", requestId=rid(), **args)["issues"] == ["run_ended"]


def test_a_persons_bearer_token_is_an_agent_and_cannot_start_an_initiator_process(publish, make_person):
    # spec §3.4 and §6 rule 4: a token issued to a client is an agent identity, even for a person
    from accounts.identity import AGENT, Identity

    publish("expense-reimbursement")
    person = make_person("emp@example.com")
    via_token = ToolCaller(Identity(organization=person.organization, kind=AGENT, ref=person.ref, user=person.user,
                                    via_client=True))
    error = via_token.fails("start_run", "invalid", process="expense-reimbursement",
                            inputs={"claimId": "C1", "manager": "m@example.com"}, requestId=rid())
    assert "initiator" in error["message"]


def test_unicode_digits_and_huge_ids_are_not_found(review, agent, person_caller):
    owner = person_caller("owner@example.com")
    view = drafted(agent, "owner@example.com")
    agent.fails("get_run", "not_found", runId="r_²")
    owner.fails("decide", "not_found", runId=view["run"]["id"], workItemId="w_²", snapshot="s", decision="failed",
                note="n", requestId=rid())
    owner.fails("decide", "not_found", runId=view["run"]["id"], workItemId="w_" + "9" * 40, snapshot="s",
                decision="failed", note="n", requestId=rid())


def test_crafted_cursors_are_invalid(agent, person_caller):
    import base64
    import json

    person = person_caller("p@example.com")
    for values in (["x", "y"], [{}, 1], ["2026-01-01T00:00:00+00:00", "x"], [1e300, 1], ["2026-01-01T00:00:00Z", 2**70]):
        cursor = base64.urlsafe_b64encode(json.dumps(values).encode()).decode()
        agent.fails("get_work", "invalid", cursor=cursor)
        agent.fails("list_runs", "invalid", cursor=cursor)
        person.fails("get_work", "invalid", cursor=cursor)
