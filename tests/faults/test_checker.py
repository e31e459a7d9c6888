"""The network harness's checker finds each violation in a hand-made history, and passes a sound one.

Each history below is what a broken server would have produced, one rule of tests/faults/checker.py
each: a node answering ok before it committed (the write missing from the final state), an error whose
write took effect, a replay answered anew or with an error, two holders of one step, a token that
worked past its lease, after a renew, a submit, an escalation or the end of its run, completions out
of order, two accepted decisions, a rejection that moved the wrong steps, a newer event consumed
first, a run that never ended. Fast: no servers, no network.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.faults import checker
from tests.faults.checker import Op
from tests.faults.cluster import FLOWS

FLOW = FLOWS["net-flow"]
T0 = 1_800_000_000.0
STEPS = ["gather", "signal", "build", "signal2", "review", "done"]


@pytest.fixture(autouse=True)
def needs_postgres():
    """The checker needs no database (overrides the fault tests' PostgreSQL requirement)."""


@pytest.fixture(autouse=True)
def services_left_running():
    """Nothing here touches PostgreSQL or Redis."""


def iso(t: float) -> str:
    return datetime.fromtimestamp(T0 + t, UTC).isoformat().replace("+00:00", "Z")


class History:
    def __init__(self):
        self.ops: list[Op] = []

    def op(self, tool: str, args: dict, start: float, end: float, outcome: str = "ok", data=None, error=None,
           actor: str = "agent0") -> Op:
        if outcome in ("ok", "dropped") and error is None:
            body = {"ok": True, "data": data or {}}
        elif outcome in ("error", "dropped"):
            body = {"ok": False, "error": {"code": error or "conflict", "message": "no"}}
        else:
            body = None
        op = Op(id=len(self.ops), actor=actor, node="app1", tool=tool, args=args, start=T0 + start, end=T0 + end,
                outcome=outcome, status=200 if outcome == "ok" else None, body=body)
        self.ops.append(op)
        return op


def run_view(run_id: str = "r_1", steps: dict | None = None, states: dict | None = None, ended: bool = True) -> dict:
    return {
        "run": {"id": run_id, "process": "net-flow", "state": "ended" if ended else "active", "startedAt": iso(0.5),
                "ended": {"by": "u_1", "at": iso(50.5), "note": None} if ended else None},
        "data": {"inputs": {"key": "k1"}, "steps": steps or {}},
        "steps": [{"id": s, "state": (states or {}).get(s, "done" if ended else None)} for s in STEPS],
        "workItems": [],
    }


def completed(at: float, **fields) -> dict:
    return {"by": "a_1", "at": iso(at), "history": [], **fields}


def sound() -> tuple[History, dict]:
    """One run through every step, with a lost claim retried, an event held then consumed, one rejection."""
    h = History()
    h.op("start_run", {"process": "net-flow", "inputs": {"key": "k1"}, "requestId": "s1"}, 0, 1,
         data={"run": {"id": "r_1", "ended": None}})
    h.op("send_event", {"runId": "r_1", "name": "go", "data": {"seq": 1}, "requestId": "e1"}, 1, 1.5,
         data={"consumedBy": None})
    h.op("claim", {"runId": "r_1", "stepId": "gather", "requestId": "c1"}, 2, 14, outcome="lost")
    h.op("claim", {"runId": "r_1", "stepId": "gather", "requestId": "c1"}, 14, 15, outcome="dropped",
         data={"token": "apt1.L1.x", "expiresAt": iso(25)})
    h.op("claim", {"runId": "r_1", "stepId": "gather", "requestId": "c1"}, 15.5, 16,
         data={"token": "apt1.L1.x", "expiresAt": iso(25)})
    h.op("claim", {"runId": "r_1", "stepId": "gather", "requestId": "c2"}, 17, 18, outcome="error", actor="agent1")
    h.op("submit", {"token": "apt1.L1.x", "output": {"n": 1}, "summary": "sum-gather", "requestId": "u1"}, 19, 20,
         data={"run": {"id": "r_1", "ended": None}})
    h.op("send_event", {"runId": "r_1", "name": "go", "data": {"seq": 2}, "requestId": "e2"}, 21, 21.5,
         data={"consumedBy": None})
    # A lease left to expire, then another agent's claim, and the old token refused.
    h.op("claim", {"runId": "r_1", "stepId": "build", "requestId": "c3"}, 22, 23,
         data={"token": "apt1.L2.x", "expiresAt": iso(29)})
    h.op("claim", {"runId": "r_1", "stepId": "build", "requestId": "c4"}, 30, 31, actor="agent1",
         data={"token": "apt1.L3.x", "expiresAt": iso(40)})
    h.op("submit", {"token": "apt1.L2.x", "output": {"n": 2}, "summary": "late", "requestId": "u2"}, 32, 33,
         outcome="error", error="stale")
    h.op("renew", {"token": "apt1.L3.x", "requestId": "n1"}, 33, 34, actor="agent1",
         data={"token": "apt1.L3.y", "expiresAt": iso(50)})
    h.op("submit", {"token": "apt1.L3.y", "output": {"n": 3}, "summary": "sum-build-1", "requestId": "u3"}, 35, 36,
         actor="agent1", data={"run": {"id": "r_1", "ended": None}})
    h.op("decide", {"runId": "r_1", "workItemId": "w_1", "snapshot": "a", "decision": "rejected", "note": "no-1",
                    "requestId": "d1"}, 40, 41, actor="person0", data={"run": {"id": "r_1", "ended": None}})
    h.op("decide", {"runId": "r_1", "workItemId": "w_1", "snapshot": "a", "decision": "approved", "requestId": "d2"},
         40, 41.5, outcome="error", error="conflict", actor="person1")
    # Stuck, escalated to a person, who sends it back; the next claim shows why.
    h.op("claim", {"runId": "r_1", "stepId": "build", "requestId": "c5"}, 42, 42.3,
         data={"token": "apt1.L4.x", "expiresAt": iso(60)})
    h.op("escalate", {"token": "apt1.L4.x", "note": "stuck-1", "requestId": "x1"}, 42.4, 42.5,
         data={"run": {"id": "r_1", "ended": None}, "workItems": [{"id": "w_3", "escalation": {"note": "stuck-1"}}]})
    h.op("get_work", {"limit": 20}, 42.6, 42.7, actor="person0",
         data={"items": [{"runId": "r_1", "workItem": {"id": "w_3", "escalation": {"note": "stuck-1", "by": "a_0"}}}]})
    h.op("decide", {"runId": "r_1", "workItemId": "w_3", "snapshot": "c", "decision": "returned", "note": "back-1",
                    "requestId": "d4"}, 42.8, 42.9, actor="person0", data={"run": {"id": "r_1", "ended": None}})
    h.op("claim", {"runId": "r_1", "stepId": "build", "requestId": "c6"}, 43, 43.3,
         data={"token": "apt1.L5.x", "expiresAt": iso(60), "handoff": {"returned": {"note": "back-1"}}})
    h.op("submit", {"token": "apt1.L5.x", "output": {"n": 4}, "summary": "sum-build-2", "requestId": "u4"}, 44, 45,
         data={"run": {"id": "r_1", "ended": None}})
    h.op("send_event", {"runId": "r_1", "name": "go", "data": {"seq": 3}, "requestId": "e3"}, 46, 46.5,
         data={"consumedBy": "signal2"})
    h.op("decide", {"runId": "r_1", "workItemId": "w_2", "snapshot": "b", "decision": "approved", "note": "yes-1",
                    "requestId": "d3"}, 50, 51, actor="person0", data={"run": {"id": "r_1", "ended": {"at": iso(50.5)}}})
    steps = {
        "gather": completed(19.5, output={"n": 1}, summary="sum-gather"),
        "signal": completed(19.5, output={"seq": 1}, by="a_0"),
        "build": completed(44.5, output={"n": 4}, summary="sum-build-2",
                           history=[completed(35.5, output={"n": 3}, summary="sum-build-1")]),
        "signal2": completed(46.2, output={"seq": 3}, history=[completed(35.5, output={"seq": 2})]),
        "review": completed(50.5, decision="approved", note="yes-1",
                            history=[completed(40.5, decision="rejected", note="no-1")]),
    }
    return h, {"r_1": run_view(steps=steps)}


def kinds(history: History, final: dict) -> set:
    return checker.check(history.ops, final, FLOW).kinds()


def details(history: History, final: dict, kind: str) -> list[str]:
    return [v.detail for v in checker.check(history.ops, final, FLOW).violations if v.kind == kind]


def request(history: History, request_id: str) -> Op:
    return next(op for op in history.ops if op.args.get("requestId") == request_id)


def test_a_sound_history_has_no_violations():
    history, final = sound()
    report = checker.check(history.ops, final, FLOW)
    assert report.violations == []


def test_an_ok_write_missing_from_the_final_state_is_found():
    history, final = sound()
    final["r_1"]["data"]["steps"]["build"]["summary"] = "something else"
    assert kinds(history, final) == {"acknowledged"}


def test_a_run_answered_as_started_but_missing_from_the_final_state_is_found():
    # A node that answers ok before its transaction commits, and the commit never comes.
    history, final = sound()
    history.op("start_run", {"process": "net-flow", "inputs": {"key": "k2"}, "requestId": "s2"}, 60, 61,
               data={"run": {"id": "r_2", "ended": None}})
    assert details(history, final, "acknowledged") == [
        "start_run s2 answered run r_2, which is not in the final state"]


def test_a_run_refused_with_an_error_yet_started_is_found():
    history, final = sound()
    history.op("start_run", {"process": "net-flow", "inputs": {"key": "k2"}, "requestId": "s2"}, 60, 61,
               outcome="error", error="invalid")
    final["r_2"] = run_view("r_2")
    final["r_2"]["data"]["inputs"]["key"] = "k2"
    assert kinds(history, final) == {"error"}


def test_an_approval_answered_ok_but_not_recorded_is_found():
    history, final = sound()
    final["r_1"]["data"]["steps"]["review"]["note"] = None
    assert details(history, final, "acknowledged") == [
        "decide d3 on r_1 answered ok but `yes-1` is not in the final state"]


def test_an_escalation_answered_ok_that_no_one_ever_saw_is_found():
    # Its note shows only in its own answer: no person's work list, no run view ever had it.
    history, final = sound()
    history.ops.remove(next(op for op in history.ops if op.tool == "get_work"))
    assert details(history, final, "acknowledged") == [
        "escalate x1 on r_1 answered ok but `stuck-1` is not in the final state"]


def test_an_escalation_answered_with_an_error_that_took_effect_is_found():
    history, final = sound()
    escalation = request(history, "x1")
    escalation.outcome, escalation.body = "error", {"ok": False, "error": {"code": "stale", "message": "no"}}
    assert "error" in kinds(history, final)


def test_a_return_answered_ok_that_never_reached_the_step_is_found():
    history, final = sound()
    del request(history, "c6").body["data"]["handoff"]
    assert details(history, final, "acknowledged") == [
        "decide d4 on r_1 answered ok but `back-1` is not in the final state"]


def test_a_write_answered_with_an_error_that_took_effect_is_found():
    history, final = sound()
    final["r_1"]["data"]["steps"]["build"]["history"].append(completed(36, output={"n": 2}, summary="late"))
    assert "error" in kinds(history, final)


def test_a_replay_answered_with_another_token_is_found():
    # spec §3.4: a lost claim retried with its requestId returns the original result, token included.
    history, final = sound()
    history.ops[4].body = {"ok": True, "data": {"token": "apt1.L9.x", "expiresAt": iso(25)}}
    assert "replay" in kinds(history, final)


def test_a_replay_answered_with_an_error_after_an_ok_answer_is_found():
    history, final = sound()
    history.op("submit", {"token": "apt1.L1.x", "output": {"n": 1}, "summary": "sum-gather", "requestId": "u1"},
               20.5, 21, outcome="error", error="stale")
    assert kinds(history, final) == {"replay"}


def test_one_request_id_sent_with_other_arguments_is_found():
    history, final = sound()
    history.op("claim", {"runId": "r_1", "stepId": "build", "requestId": "c1"}, 16.1, 16.2, outcome="lost")
    assert "replay" in kinds(history, final)


def test_two_callers_holding_one_step_at_once_are_found():
    history, final = sound()
    # agent1 claims gather (another requestId) while agent0's lease (until 25, submitted at 19) stands.
    history.op("claim", {"runId": "r_1", "stepId": "gather", "requestId": "c9"}, 16.5, 17, actor="agent1",
               data={"token": "apt1.L9.x", "expiresAt": iso(30)})
    assert "exclusive" in kinds(history, final)


def test_a_token_that_worked_after_its_lease_ended_is_found():
    history, final = sound()
    stale = next(op for op in history.ops if op.args.get("requestId") == "u2")
    stale.outcome, stale.body = "ok", {"ok": True, "data": {"run": {"id": "r_1", "ended": None}}}
    final["r_1"]["data"]["steps"]["build"]["history"].append(completed(36, output={"n": 2}, summary="late"))
    assert "expired" in kinds(history, final)


def test_a_token_replaced_by_renew_that_still_worked_is_found():
    history, final = sound()
    history.op("submit", {"token": "apt1.L3.x", "output": {"n": 3}, "summary": "sum-old", "requestId": "u8"},
               34.5, 34.8, actor="agent1", data={"run": {"id": "r_1", "ended": None}})
    assert "expired" in kinds(history, final)


def test_a_token_that_worked_after_its_submit_ended_the_lease_is_found():
    # gather was submitted (u1, answered at 20); the same token submits again, another requestId.
    history, final = sound()
    history.op("submit", {"token": "apt1.L1.x", "output": {"n": 5}, "summary": "sum-gather", "requestId": "u9"},
               20.5, 21, data={"run": {"id": "r_1", "ended": None}})
    assert details(history, final, "expired") == [
        "submit u9 by agent0 worked with a lease that u1 had already ended"]


def test_a_token_that_worked_after_its_escalation_is_found():
    history, final = sound()
    history.op("submit", {"token": "apt1.L4.x", "output": {"n": 5}, "summary": "sum-build-2", "requestId": "u9"},
               42.55, 42.58, data={"run": {"id": "r_1", "ended": None}})
    assert details(history, final, "expired") == [
        "submit u9 by agent0 worked with a lease that x1 had already ended"]


def test_a_token_that_worked_after_its_run_ended_is_found():
    history, final = sound()
    history.op("claim", {"runId": "r_1", "stepId": "signal2", "requestId": "c9"}, 46.6, 46.8, actor="agent1",
               data={"token": "apt1.L9.x", "expiresAt": iso(70)})
    history.op("renew", {"token": "apt1.L9.x", "requestId": "n9"}, 52, 53, actor="agent1",
               data={"token": "apt1.L9.y", "expiresAt": iso(80)})
    assert details(history, final, "expired") == ["renew n9 worked on r_1 after the run ended"]


def test_a_first_completion_other_than_the_first_step_is_found():
    history, final = sound()
    steps = final["r_1"]["data"]["steps"]
    steps["signal"]["at"] = iso(19)
    assert details(history, final, "order")[0] == "r_1: the first completion is signal, not gather"


def test_completions_out_of_declared_order_are_found():
    history, final = sound()
    final["r_1"]["data"]["steps"]["gather"]["at"] = iso(36)
    assert "order" in kinds(history, final)


def test_two_accepted_decisions_on_one_work_item_are_found():
    history, final = sound()
    second = next(op for op in history.ops if op.args.get("requestId") == "d2")
    second.outcome, second.body = "ok", {"ok": True, "data": {"run": {"id": "r_1", "ended": None}}}
    assert "first decision" in kinds(history, final)


def test_a_rejection_that_moved_the_wrong_steps_is_found():
    # spec §3.1: a rejection into build moves build and signal2 into history, never gather.
    history, final = sound()
    final["r_1"]["data"]["steps"]["gather"]["history"] = [completed(18, output={"n": 0}, summary="x")]
    final["r_1"]["data"]["steps"]["signal2"]["history"] = []
    found = checker.check(history.ops, final, FLOW)
    assert {v.kind for v in found.violations} >= {"history"}
    assert len([v for v in found.violations if v.kind == "history"]) == 2


def test_a_newer_event_consumed_before_an_older_one_is_found():
    # spec §3.6: held events with the same name are consumed oldest first.
    history, final = sound()
    steps = final["r_1"]["data"]["steps"]
    steps["signal"]["output"], steps["signal2"]["history"][0]["output"] = {"seq": 2}, {"seq": 1}
    assert "events" in kinds(history, final)


def test_a_newer_event_consumed_while_the_older_is_still_held_is_found():
    history, final = sound()
    final["r_1"]["data"]["steps"]["signal2"]["history"][0]["output"] = {"seq": 9}
    assert kinds(history, final) == {"events"}


def test_a_run_that_never_ended_is_found():
    history, final = sound()
    view = final["r_1"]
    view["run"].update(ended=None, state="active")
    view["steps"][2]["state"] = "ready"
    assert "progress" in kinds(history, final)


def test_a_run_parked_on_an_event_nobody_sends_is_not_stuck():
    park = FLOWS["net-park"]
    view = {"run": {"id": "r_2", "process": "net-park", "state": "waiting", "ended": None},
            "data": {"inputs": {"key": "k2"}, "steps": {"work": completed(5, output={"n": 1}, summary="w")}},
            "steps": [{"id": "work", "state": "done"}, {"id": "hold", "state": "waiting"}, {"id": "done", "state": None}]}
    assert checker.check([], {"r_2": view}, park).violations == []


def test_time_from_heal_to_moving_is_measured():
    history, final = sound()
    report = checker.check(history.ops, final, FLOW, heal_at=T0 + 30)
    # r_1 was live at 30; its first write after the heal (agent1's claim) was answered at 31.
    assert report.figures["heal to all moving (s)"] == 1.0
    # A run whose every answer after the heal was lost still moved: it ended, at 50.5.
    history.ops = [op for op in history.ops if op.start < 30]
    report = checker.check(history.ops, final, FLOW, heal_at=T0 + 30)
    assert report.figures["heal to all moving (s)"] == 20.5
    # One that neither wrote nor ended after the heal never moved.
    final["r_1"]["run"]["ended"] = None
    report = checker.check(history.ops, final, FLOW, heal_at=T0 + 30)
    assert report.figures["heal to all moving (s)"] == float("inf")
