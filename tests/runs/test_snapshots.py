"""A run's next write decided from this process's snapshot of it (runs.snapshots): the same instances a
read builds, one statement in place of two, and every answer the database would give when the run
moved elsewhere, when a requestId comes again, or when the answer is not a write applied."""

import datetime as dt
import json

import pytest
from django.db import connection
from django.db.models import F
from psycopg.types.json import Jsonb

from base import tracked
from runs import snapshots
from runs.models import RUN_REPLACED, Event, Lease, Run, RunStep
from tests.runs.conftest import fields_of, rid

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FLOW = """---
name: snapshots
description: An agent works twice, waits for an event, a person approves.
inputs:
  tag: string
  extra: object
steps:
  - id: work
    agent: Work.
    output:
      n: number
      doc: object
  - id: more
    agent: More work.
    output:
      note: string
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

# What JSON spells in more than one way, and what jsonb keeps in an order of its own.
AWKWARD = {
    "b": 1, "aa": 2.0, "a": -0.0, "é": 1e21, "B": [1e-7, 1e16, 123456789.0, 1e23], "ab": {"z": None, "y": True},
    "𝄞": "\u2028 \"quoted\"", "big": 2**70, "c": [{"zz": 1, "z": 2}],
}


@pytest.fixture(autouse=True)
def needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("snapshots stand on optimistic writes, which are PostgreSQL's (DATABASE_URL is not PostgreSQL)")


def _key(run_id: str) -> int:
    return int(run_id[2:])


def _recalled(run_id: str):
    with snapshots.offered():
        return snapshots.recall(_key(run_id), lease_id=None, organization_id=None, also=[], leases=0)


def assert_snapshot_is_the_rows(run_id: str) -> None:
    recalled = _recalled(run_id)
    assert recalled is not None, "the write kept no snapshot"
    run, steps, _also, _keys = recalled
    # Each instance as a read builds it and runs.store remembers it as loaded (base.tracked), its values
    # as loaded among its attributes.
    assert fields_of(run) == fields_of(tracked.remember(Run.objects.get(pk=_key(run_id)), by_identity=RUN_REPLACED))
    read = sorted(RunStep.objects.filter(run_id=_key(run_id)), key=lambda row: row.pk)
    assert [fields_of(row) for row in sorted(steps, key=lambda row: row.pk)] == [
        fields_of(tracked.remember(row)) for row in read
    ]
    held = [row.lease_id for row in read if row.lease_id is not None]
    for lease in Lease.objects.filter(pk__in=held):
        with snapshots.offered():
            found = snapshots.recall(None, lease_id=lease.public_id, organization_id=None,
                                     also=[(Lease, "t.public_id = %s", [lease.public_id], "")], leases=0)
        assert found is not None, "a held lease is not in the snapshot"
        assert fields_of(found[2][0][0]) == fields_of(lease)


@pytest.fixture
def flow(publish, agent, person_caller):
    publish(FLOW)
    return agent, person_caller("c@example.com", groups=["checkers"])


def test_every_write_keeps_the_rows_a_read_would_build(flow):
    agent, checker = flow
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "é ☃ 𝄞", "extra": AWKWARD})["run"]["id"]
    assert_snapshot_is_the_rows(run_id)
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    assert_snapshot_is_the_rows(run_id)
    token = agent.write("renew", token=token, progress="half way")["token"]
    assert_snapshot_is_the_rows(run_id)
    agent.write("submit", token=token, output={"n": 1e21, "doc": AWKWARD}, summary="s")
    assert_snapshot_is_the_rows(run_id)
    agent.write("send_event", runId=run_id, name="settled", data={"at": 2.0, "doc": AWKWARD})  # held for later
    assert_snapshot_is_the_rows(run_id)
    token = agent.write("claim", runId=run_id, stepId="more")["token"]
    view = agent.write("submit", token=token, output={"note": "1.0"}, summary="s")
    assert_snapshot_is_the_rows(run_id)
    [item] = view["workItems"]
    checker.write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved")
    assert _recalled(run_id) is None, "an ended run keeps no snapshot"
    assert agent("get_run", runId=run_id)["run"]["state"] == "ended"


def test_a_write_on_a_snapshot_sends_one_statement_where_a_read_sends_two(flow, settings):
    agent, _checker = flow
    sent = []

    def count(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    def statements(tool, **arguments):
        sent.clear()
        with connection.execute_wrapper(count):
            answer = agent.write(tool, **arguments)
        return answer, len(sent)

    # Keys for new leases come ahead, a few dozen at a time: the first claim of a process takes them.
    first = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    (_claimed, taking_keys) = statements("claim", runId=first, stepId="work")
    assert taking_keys == 2
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    (claimed, warm) = statements("claim", runId=run_id, stepId="work")
    (view, submitted) = statements("submit", token=claimed["token"], output={"n": 1, "doc": {}}, summary="s")
    assert step_state(view, "work") == "done" and step_state(view, "more") == "ready"
    assert (warm, submitted) == (1, 1)

    settings.RUN_SNAPSHOTS = 0
    (claimed, cold) = statements("claim", runId=run_id, stepId="more")
    (view, read_first) = statements("submit", token=claimed["token"], output={"note": "n"}, summary="s")
    assert (cold, read_first) == (2, 2)
    assert step_state(view, "more") == "done"


def step_state(view: dict, step_id: str) -> str:
    return next(step["state"] for step in view["steps"] if step["id"] == step_id)


def test_a_run_moved_by_another_process_is_read_and_decided_again(flow):
    agent, _checker = flow
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    old = agent.write("claim", runId=run_id, stepId="work")["token"]
    before_renewal = snapshots._runs[_key(run_id)]
    agent.write("renew", token=old)
    # Another process renewed the lease: this one still holds the snapshot from before.
    snapshots._runs[_key(run_id)] = before_renewal
    snapshots._by_lease[Lease.objects.order_by("pk").first().public_id] = _key(run_id)
    error = agent.fails("submit", "stale", token=old, output={"n": 1, "doc": {}}, summary="s", requestId=rid())
    assert "replaced" in error["message"]
    assert RunStep.objects.get(run_id=_key(run_id), step_id="work").state == "claimed"


def test_a_run_whose_history_is_not_the_snapshots_is_read_though_its_revision_matches(flow):
    agent, _checker = flow
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    # As a database restored behind a running process might hold: the same revision, another history.
    RunStep.objects.filter(run_id=_key(run_id), step_id="work").update(state="ready", lease=None, claimed_by="")
    Run.objects.filter(pk=_key(run_id)).update(updated_at=F("updated_at") - dt.timedelta(seconds=1))
    agent.fails("submit", "stale", token=token, output={"n": 1, "doc": {}}, summary="s", requestId=rid())


def test_a_requestid_again_answers_with_its_record_on_a_snapshot_too(flow):
    agent, _checker = flow
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    request_id = rid()
    first = agent("claim", runId=run_id, stepId="work", requestId=request_id)
    assert agent("claim", runId=run_id, stepId="work", requestId=request_id) == first
    # An event held for later: a second one would be applied on the snapshot, and its record's key refuses it.
    sent = rid()
    held = agent("send_event", runId=run_id, name="settled", data={"n": 1}, requestId=sent)
    assert agent("send_event", runId=run_id, name="settled", data={"n": 1}, requestId=sent) == held
    assert Event.objects.filter(run_id=_key(run_id)).count() == 1
    assert _recalled(run_id) is not None
    error = agent.fails("send_event", "conflict", runId=run_id, name="settled", data={"n": 2}, requestId=sent)
    assert error["issues"] == ["request_id_reused"]
    view = agent("submit", token=first["token"], output={"n": 1, "doc": {}}, summary="s", requestId=request_id + "x")
    assert agent("submit", token=first["token"], output={"n": 1, "doc": {}}, summary="s", requestId=request_id + "x") == view


def test_a_refusal_on_a_snapshot_is_the_databases(flow, settings):
    agent, checker = flow
    run_id = agent.write("start_run", process="snapshots", inputs={"tag": "t", "extra": {}})["run"]["id"]
    agent.write("claim", runId=run_id, stepId="work")
    refusals = [
        (agent, "claim", {"runId": run_id, "stepId": "more"}),
        (agent, "claim", {"runId": run_id, "stepId": "work"}),
        (checker, "decide", {"runId": run_id, "workItemId": "w_999", "snapshot": "0" * 64, "decision": "approved"}),
    ]
    before = list(RunStep.objects.filter(run_id=_key(run_id)).order_by("pk").values_list("state", flat=True))
    answers = {}
    for kept in (256, 0):
        settings.RUN_SNAPSHOTS = kept
        for caller, tool, arguments in refusals:
            assert (_recalled(run_id) is not None) == bool(kept)
            answers.setdefault(tool + json.dumps(arguments), []).append(caller.raw(tool, requestId=rid(), **arguments))
    for (on_snapshot, read) in answers.values():
        assert not on_snapshot[1]["ok"] and on_snapshot == read
    assert list(RunStep.objects.filter(run_id=_key(run_id)).order_by("pk").values_list("state", flat=True)) == before


def test_a_process_keeps_at_most_its_setting_and_no_large_run_data(flow, settings):
    agent, _checker = flow
    settings.RUN_SNAPSHOTS = 2
    runs = [agent.write("start_run", process="snapshots", inputs={"tag": str(n), "extra": {}})["run"]["id"]
            for n in range(3)]
    assert [_recalled(run_id) is not None for run_id in runs] == [False, True, True]
    large = agent.write("start_run", process="snapshots",
                        inputs={"tag": "x" * (snapshots.SNAPSHOT_DATA_CHARACTERS + 1), "extra": {}})["run"]["id"]
    assert _recalled(large) is None
    agent.write("claim", runId=large, stepId="work")  # read, and still kept by nobody
    assert _recalled(large) is None


@pytest.mark.parametrize("value", [
    AWKWARD, 1e21, -0.0, 1.0, 1e-7, 1e16, 123456789.0, 1e23, 2**70, 5e-324, [1.5, {"z": None}], (1, "a"), True, "𝄞",
    {"": 0, "\u00e9": 1, "e\u0301": 2, "ee": 3, "\U0001d11e": 4},
])
def test_a_json_value_is_kept_as_jsonb_gives_it_back(value):
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [Jsonb(value)])
        stored = json.loads(cursor.fetchone()[0])
    kept = snapshots._as_jsonb(value)
    assert repr(kept) == repr(stored)
    assert json.dumps(kept) == json.dumps(stored)  # key order too


def test_a_document_made_from_a_stored_one_is_kept_as_a_whole_one_is():
    before = snapshots._as_jsonb({"inputs": AWKWARD, "steps": {"a": {"output": AWKWARD, "history": [AWKWARD]}}})
    # As a write makes run data: new dicts around the parts it keeps, a part moved to another key, a new one.
    value = {
        "steps": {**before["steps"], "b": {"output": {"z": 1, "yy": 2.0}, "history": [*before["steps"]["a"]["history"], {"c": 1e21}]},
                  "c": before["inputs"]["ab"]},
        "inputs": before["inputs"],
        "moved": before["steps"]["a"],
    }
    kept = snapshots._as_jsonb_after(value, before)
    assert json.dumps(kept) == json.dumps(snapshots._as_jsonb(value))  # key order and spelling too
    assert repr(kept) == repr(snapshots._as_jsonb(value))
    assert kept["inputs"] is before["inputs"]  # a part kept in its place is taken as it is
    assert kept["steps"]["a"] is before["steps"]["a"]


def test_a_rows_values_are_kept_in_their_stored_form_whatever_types_came_before():
    # _stored learns, for each combination of value types a model's rows come in, what it turns into its
    # stored form: a choice's member, a time in another zone and a document each take theirs after rows
    # of plain values came first, and a time in no zone is refused every time, never learned as kept.
    from base import backend
    from runs.models import StepState

    def step(**values):
        return backend.created(RunStep, id=1, run_id=2, organization_id=3, version_id=4, step_id="s", position=0,
                               kind="agent", **values)

    moment = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    plain = snapshots._stored(RunStep, step(state="ready"))
    assert plain[snapshots._plan(RunStep).index["state"]] == "ready"
    index = snapshots._plan(RunStep).index
    mixed = snapshots._stored(RunStep, step(state=StepState.READY, due_at=moment, handoff={"bb": 1, "a": 1.0}))
    assert type(mixed[index["state"]]) is str and mixed[index["state"]] == "ready"
    assert mixed[index["due_at"]] == moment and mixed[index["due_at"]].tzinfo is dt.UTC
    assert json.dumps(mixed[index["handoff"]]) == json.dumps({"a": 1.0, "bb": 1})
    for _ in range(2):
        with pytest.raises(snapshots.Unsure):
            snapshots._stored(RunStep, step(state="ready", due_at=dt.datetime(2026, 1, 2)))
    assert snapshots._stored(RunStep, step(state="ready")) == plain
