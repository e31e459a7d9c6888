"""A tool call's SQL query count does not grow with the number of runs or a step's history."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.runs.conftest import rid
from tests.runs.test_agent_loop import ONE_STEP

LOOP = """---
name: loop
description: An agent works, a person approves or sends it back.
steps:
  - id: work
    agent: Work.
    output:
      n: number
  - id: check
    person: checkers
    approve: Check.
    on_reject: work
  - id: done
    finish: ok
---
"""


def queries(call) -> int:
    """The queries a call sends: a batch of several statements is one (base.sql)."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def agent_cycle(agent, run_id):
    """Claim and submit the ready step of one run; return the queries of each call."""
    counts = {}
    request_id = rid()
    counts["claim"] = queries(lambda: agent("claim", runId=run_id, stepId="work", requestId=request_id))
    token = agent("claim", runId=run_id, stepId="work", requestId=request_id)["token"]
    counts["submit"] = queries(
        lambda: agent("submit", token=token, output={"result": "r"}, summary="s", requestId=rid())
    )
    return counts


def test_query_counts_are_flat_in_the_number_of_runs(publish, agent):
    publish(ONE_STEP)
    def measure():
        run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
        counts = {
            "start_run": queries(lambda: agent.write("start_run", process="one-step", inputs={"ticket": "T"})),
            "get_work": queries(lambda: agent("get_work", limit=5)),
            "get_run": queries(lambda: agent("get_run", runId=run_id)),
        }
        counts.update(agent_cycle(agent, run_id))
        return counts

    measure()  # warm: a process keeps the published versions it has read
    few = measure()
    for _ in range(40):
        agent.write("start_run", process="one-step", inputs={"ticket": "T"})
    many = measure()
    print("query counts", few)
    assert many == few, (few, many)
    assert few["get_work"] <= 4 and few["get_run"] <= 6 and few["submit"] <= 14, few
    if connection.vendor == "postgresql":
        # A write to a run sends its lock, its steps and its requestId look as one query (submit's lease
        # too, claim's new lease key), and its inserts, updates and record as another; start_run looks
        # up its requestId, its version and its run's key together, and get_work its due runs and its
        # ready steps, and get_run its run, steps and open items (SQLite runs each statement on its own).
        assert few["start_run"] <= 4 and few["get_work"] == 1 and few["claim"] <= 4 and few["submit"] <= 4, few
        assert few["get_run"] <= 3, few


def test_query_counts_are_flat_in_a_steps_history(publish, agent, person_caller):
    publish(LOOP)
    checker = person_caller("c@example.com", groups=["checkers"])
    run_id = agent.write("start_run", process="loop", inputs={})["run"]["id"]

    def round_trip(reject: bool) -> dict:
        token = agent.write("claim", runId=run_id, stepId="work")["token"]
        counts = {"submit": queries(lambda: agent("submit", token=token, output={"n": 1}, summary="s",
                                                   requestId=rid()))}
        [item] = agent("get_run", runId=run_id)["workItems"]
        counts["get_run"] = queries(lambda: agent("get_run", runId=run_id))
        counts["decide"] = queries(lambda: checker(
            "decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
            decision="rejected" if reject else "approved", note="again" if reject else None, requestId=rid(),
        ) if reject else checker("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                                 decision="approved", requestId=rid()))
        return counts

    round_trip(reject=True)  # warm: a process keeps the published versions it has read
    first = round_trip(reject=True)
    for _ in range(11):
        round_trip(reject=True)
    later = round_trip(reject=True)
    assert later == first, (first, later)
    view = agent("get_run", runId=run_id)
    assert len(view["data"]["steps"]["work"]["history"]) == 13


def test_a_write_sends_only_the_run_columns_it_changed(publish, agent, monkeypatch):
    # A claim changes the run's wake-up (its lease's expiry), not its data: the run document, which
    # grows with every step's record, is not sent again on every write.
    from base import sql
    from runs.models import Run

    publish(ONE_STEP)
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    sent = []
    guard = sql.guard

    def recording(model, pk, changes, expected):
        if model is Run:
            sent.append(set(changes))
        guard(model, pk, changes, expected)

    monkeypatch.setattr(sql, "guard", recording)
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    # The revision moves at every save: a write that read the run before this one finds it moved.
    assert sent and "data" not in sent[-1] and sent[-1] == {"wake_at", "updated_at", "revision"}, sent
    agent.write("submit", token=token, output={"result": "r"}, summary="s")
    assert {"data", "state", "outcome", "ended"} <= sent[-1], sent
    run = Run.objects.get(pk=int(run_id.removeprefix("r_")))
    assert run.data["steps"]["work"]["output"] == {"result": "r"} and run.outcome == "completed"
