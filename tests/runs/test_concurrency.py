"""Concurrent writes on PostgreSQL: the run lock serialises them (spec §6 rule 2, Step 7)."""

import threading

import pytest
from django.db import connection

from runs.models import IdempotencyRecord, Lease, RunStep
from tests.runs.conftest import ToolCaller, rid
from tests.runs.test_agent_loop import ONE_STEP

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite ignores select_for_update); set DATABASE_URL")


def in_threads(count: int, work):
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int):
        from django.db import connections

        try:
            barrier.wait()
            results[index] = work(index)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_twenty_agents_claiming_one_step_get_one_token_and_nineteen_conflicts(publish, make_agent):
    publish(ONE_STEP)
    callers = [ToolCaller(make_agent(f"agent-{i}")) for i in range(20)]
    run_id = callers[0].write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    results = in_threads(20, lambda i: callers[i].raw("claim", runId=run_id, stepId="work", requestId=rid())[1])
    winners = [r for r in results if r["ok"]]
    losers = [r for r in results if not r["ok"]]
    assert len(winners) == 1 and len(losers) == 19
    assert {tuple(r["error"]["issues"]) for r in losers} == {("claimed_by_other",)}
    assert Lease.objects.count() == 1


def test_twenty_concurrent_replays_of_one_submit_make_one_completion(publish, make_agent):
    publish(ONE_STEP)
    agent = ToolCaller(make_agent())
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    request_id = rid()
    results = in_threads(
        20, lambda i: agent.raw("submit", token=token, output={"result": "r"}, summary="s", requestId=request_id)[1]
    )
    assert all(r["ok"] for r in results), [r for r in results if not r["ok"]][:1]
    assert all(r == results[0] for r in results)
    assert IdempotencyRecord.objects.filter(request_id=request_id).count() == 1
    view = agent("get_run", runId=run_id)
    assert view["data"]["steps"]["work"]["history"] == [] and view["run"]["outcome"] == "completed"


def test_twenty_concurrent_replays_of_one_start_run_make_one_run(publish, make_agent):
    from runs.models import Run

    publish(ONE_STEP)
    agent = ToolCaller(make_agent())
    request_id = rid()
    results = in_threads(
        20, lambda i: agent.raw("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)[1]
    )
    assert all(r["ok"] for r in results) and all(r == results[0] for r in results)
    assert Run.objects.count() == 1 and RunStep.objects.count() == 2


def test_writes_to_different_runs_do_not_wait_on_each_other(publish, make_agent):
    from django.db import transaction

    from runs import engine

    publish(ONE_STEP)
    agent = ToolCaller(make_agent())
    first = agent.write("start_run", process="one-step", inputs={"ticket": "A"})["run"]["id"]
    second = agent.write("start_run", process="one-step", inputs={"ticket": "B"})["run"]["id"]
    held = threading.Event()
    release = threading.Event()

    def hold_first():
        from django.db import connections

        try:
            with transaction.atomic():
                engine.load_for_write(int(first[2:]))
                held.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_first)
    holder.start()
    assert held.wait(10)
    try:
        claimed = agent.raw("claim", runId=second, stepId="work", requestId=rid())[1]
        assert claimed["ok"]
    finally:
        release.set()
        holder.join()
