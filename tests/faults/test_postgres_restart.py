"""PostgreSQL restarted under load: callers get `retry`, never a 500, and a retry succeeds (issue 7 §2).

Sixteen agent threads drive one-step runs against gunicorn (two workers) while PostgreSQL is
restarted. A call that fails must fail as `{"ok": false, "error": {"code": "retry"}}` with HTTP 503,
or as a dropped connection; the agent sends the same call again with the same requestId (bounded
retries with backoff) and it must go through. Afterwards every run was completed exactly once: one
run per acknowledged start_run, one lease, one completion, empty history.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from bench.agents import ONE_STEP
from tests.faults import harness
from tests.faults.harness import CallLog, Client, Server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

AGENTS = 8
THREADS = 16
BEFORE_SECONDS = 2.0
AFTER_SECONDS = 3.0


class GaveUp(Exception):
    pass


def agent_loop(client: Client, stop: threading.Event, index: int, finished: list, gave_up: list) -> None:
    def persist(tool: str, arguments: dict):
        # A 500 is a finding (asserted below), but the agent still tries again to see whether the
        # same requestId goes through once the database is back.
        outcome = harness.call_until_answered(client, tool, arguments, attempts=60, budget=60, max_delay=0.5,
                                              also_retry=lambda call: call.is_server_error or call.body is None)
        if not outcome.final.ok:
            gave_up.append(outcome)
            raise GaveUp
        return outcome.final.data

    n = 0
    try:
        while not stop.is_set():
            ticket = f"T-{index}-{n}"
            run_id = persist("start_run", {"process": "bench-one", "inputs": {"ticket": ticket},
                                           "requestId": str(uuid.uuid4())})["run"]["id"]
            persist("get_work", {"process": "bench-one", "limit": 5})
            token = persist("claim", {"runId": run_id, "stepId": "work", "requestId": str(uuid.uuid4())})["token"]
            view = persist("submit", {"token": token, "output": {"result": ticket}, "summary": "Done.",
                                      "requestId": str(uuid.uuid4())})
            assert view["run"]["state"] == "ended"
            finished.append(run_id)
            n += 1
    except GaveUp:
        return


def test_postgres_restart_under_load_answers_retry_and_retries_succeed(logs):
    if harness.postgres_version() is None:
        pytest.skip("no PostgreSQL cluster under /etc/postgresql for pg_ctlcluster to restart")
    began = time.monotonic()
    url = harness.fault_database("fault_pg_restart")
    info = harness.setup_database(url, {"processes": [{"text": ONE_STEP}], "agents": AGENTS})
    log = CallLog()
    finished: list[str] = []
    gave_up: list = []
    server = Server(url, logs, "pg-restart", workers=2)
    try:
        tokens = harness.bearer_tokens(server, info["agents"])
        stop = threading.Event()
        threads = [
            threading.Thread(target=agent_loop, daemon=True,
                             args=(Client(server.port, tokens[i % AGENTS], log, agent=i % AGENTS), stop, i,
                                   finished, gave_up))
            for i in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        time.sleep(BEFORE_SECONDS)
        restart_began = time.monotonic()
        try:
            restarted = harness.pg_ctlcluster("restart")
        finally:
            back = harness.wait_postgres(60)
        restart_ended = time.monotonic()
        assert restarted.returncode == 0, restarted.stderr
        assert back, "PostgreSQL did not come back"
        time.sleep(AFTER_SECONDS)
        stop.set()
        for thread in threads:
            thread.join(90)
        assert not any(thread.is_alive() for thread in threads), "an agent thread is stuck"
        tracebacks = server.tracebacks()
        health = server.health()
    finally:
        server.stop()

    calls = list(log)
    errors_500 = [c for c in calls if c.is_server_error]
    not_json = [c for c in calls if c.status is not None and c.body is None]
    retry_answers = [c for c in calls if c.status == 503 and c.code == "retry"]
    dropped = [c for c in calls if c.failure is not None]
    other_refusals = [c for c in calls if c.status is not None and not c.ok and not c.is_retry
                      and not c.is_server_error]
    figures = dict(
        calls=len(calls),
        runs_finished=len(finished),
        retry_503=len(retry_answers),
        dropped_connections=len(dropped),
        http_500=len(errors_500),
        gave_up=len(gave_up),
        restart_seconds=round(restart_ended - restart_began, 1),
        retried_tools=dict(Counter(c.tool for c in retry_answers + dropped + errors_500)),
        tools_500=dict(Counter(c.tool for c in errors_500)),
        seconds=round(time.monotonic() - began, 1),
    )
    harness.report("postgres restart", **figures)

    origins = Counter(harness.origin(t) for t in tracebacks)
    assert not errors_500 and not not_json, (
        f"{len(errors_500)} answers were 500 instead of 503 retry, by tool {dict(Counter(c.tool for c in errors_500))};"
        f" the server's tracebacks, by where they left the project's code: {dict(origins)}; first call: "
        f"{(errors_500 or not_json)[0].describe()[:400]}\nfirst traceback (tail):\n"
        + (tracebacks[0][-2500:] if tracebacks else "(none logged)")
    )
    assert not other_refusals, "refused for another reason: " + other_refusals[0].describe()
    assert not gave_up, "a call never went through: " + gave_up[0].final.describe()
    assert retry_answers or dropped, "the restart hit no call: the load did not overlap it"
    assert not tracebacks, tracebacks[0]
    assert health[0] == 200, health

    # Every run was started once and completed once.
    acked_runs = set(finished)
    rows = harness.sql(url, "SELECT r.id, r.state, r.outcome, s.state, s.attempt, "
                            "jsonb_array_length(r.data->'steps'->'work'->'history') FROM runs_run r "
                            "JOIN runs_runstep s ON s.run_id = r.id AND s.step_id = 'work'")
    assert {f"r_{row[0]}" for row in rows} == acked_runs, "runs in the database differ from those the agents ran"
    wrong = [row for row in rows if row[1:] != ("ended", "completed", "done", 1, 0)]
    assert not wrong, f"runs not completed exactly once: {wrong[:5]}"
    per_run = harness.sql(url, "SELECT run_id, tool, count(*) FROM runs_idempotencyrecord GROUP BY run_id, tool")
    assert all(count == 1 for _, _, count in per_run), [row for row in per_run if row[2] != 1][:5]
    assert Counter(tool for _, tool, _ in per_run) == {t: len(acked_runs) for t in ("start_run", "claim", "submit")}
    leases = harness.sql(url, "SELECT run_id, count(*) FROM runs_lease GROUP BY run_id HAVING count(*) <> 1")
    assert not leases, f"runs with more than one lease: {leases[:5]}"
    harness.drop_database("fault_pg_restart")
