"""bench/orm_store.py does base.sql's work through the plain ORM: the same writes, so the comparison holds."""

import base64

import pytest

from base import sql
from bench.orm_store import LEFT_TO_THE_LAYER, REPLACED, plain_orm
from runs.models import Event, Run, RunState, RunStep, WorkItem, public_pk
from tests.runs.conftest import rid

FLOW = """---
name: orm-flow
description: An agent works, waits for an event, a person approves.
steps:
  - id: work
    agent: Work.
    output:
      n: number
    evidence: [file]
  - id: settle
    wait_for: settled
    next: check
  - id: check
    person: checkers
    approve: Check.
  - id: done
    finish: ok
---
"""


@pytest.fixture
def orm():
    LEFT_TO_THE_LAYER.clear()
    with plain_orm():
        yield
    LEFT_TO_THE_LAYER.clear()


def test_a_run_goes_from_start_to_end_through_the_plain_orm(publish, agent, person_caller, orm):
    publish(FLOW)
    checker = person_caller("c@example.com", groups=["checkers"])
    run_id = agent.write("start_run", process="orm-flow", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    token = agent.write("renew", token=token, progress="half")["token"]
    upload = agent.write("upload", fileName="a.txt", contentType="text/plain",
                         contentBase64=base64.b64encode(b"abc").decode())
    agent.write("submit", token=token, output={"n": 1}, summary="s", evidence=[{"kind": "file", "ref": upload["id"]}])
    assert agent.write("send_event", runId=run_id, name="settled")["consumedBy"] == "settle"
    [item] = agent("get_run", runId=run_id)["workItems"]
    checker.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved")

    run = Run.objects.get(pk=public_pk(run_id, "r"))
    assert (run.state, run.outcome) == (RunState.ENDED, "ok")
    assert set(RunStep.objects.filter(run=run).values_list("step_id", "state")) == {
        ("work", "done"), ("settle", "done"), ("check", "done"), ("done", "done"),
    }
    assert Event.objects.get(run=run).consumed_by == "settle"
    assert not WorkItem.objects.filter(run=run, state="open").exists()
    assert not LEFT_TO_THE_LAYER, "reads of a form the ORM stand-in does not know went to base.sql"


def test_a_replayed_request_answers_as_the_first_through_the_plain_orm(publish, agent, orm):
    publish(FLOW)
    request_id = rid()
    first = agent("start_run", process="orm-flow", inputs={}, requestId=request_id)
    assert agent("start_run", process="orm-flow", inputs={}, requestId=request_id) == first
    assert Run.objects.count() == 1


def test_a_read_of_an_unknown_form_is_left_to_base_sql_and_counted(publish, agent, orm):
    publish(FLOW)
    run_id = agent.write("start_run", process="orm-flow", inputs={})["run"]["id"]
    where = "t.run_id = %s AND t.state IN ('ready', 'waiting')"
    [rows] = sql.select_many([(RunStep, where, [public_pk(run_id, "r")], "ORDER BY t.id")])
    assert [row.step_id for row in rows] == ["work"]
    assert LEFT_TO_THE_LAYER[("RunStep", where, "ORDER BY t.id")] == 1


def test_base_sql_is_itself_again_afterwards():
    layer = {name: getattr(sql, name) for name in REPLACED}
    with plain_orm():
        assert all(getattr(sql, name) is not layer[name] for name in REPLACED)
    assert all(getattr(sql, name) is layer[name] for name in REPLACED)
