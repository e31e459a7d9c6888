"""How many round trips each tool costs PostgreSQL, counted on the wire, so they cannot creep back.

A round trip is one exchange that ends with the server's ReadyForQuery: BEGIN and COMMIT count, a batch
of statements sent as one query counts once. libpq's own protocol trace (psycopg's `PGconn.trace`) is
read, so nothing of the server's code is trusted to count itself. The figures are in docs/deploy.md.
"""

import base64
import os
import tempfile

import pytest
from django.db import connection
from psycopg import pq

from tests.runs.conftest import rid

# Transactional, as a request is: each write's reads and its batch go as they do in production.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FLOW = """---
name: round-trips
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

# The most each tool may cost, as measured (docs/deploy.md). A write to a run reads the run, its steps
# and its requestId look in one round trip and sends its changes, guarded by the run's revision, in one
# statement (runs/idempotency.py, base.sql.optimistic), without BEGIN or COMMIT; some writes read more in
# between (a decision's work items and the decider's groups, the people a notice goes to, keys for new
# work items, a submit's evidence). A write that owes email sends it once applied, and that is counted
# too (`send_event` and `escalate` here: 5 of theirs). `start_run` inserts the new run and its rows in one
# statement, guarded by the version it found last in this process (the first reads its process and its
# requestId look in one round trip first); `upload` reads its file and its record, then inserts, unguarded.
BUDGET = {
    "describe": 0,  # answered from what the process already knows
    "list_processes": 2,
    "start_run": 1,
    "get_run": 4,  # BEGIN, one snapshot (REPEATABLE READ), the run with its steps and items, COMMIT
    "get_work": 1,
    "claim": 2,
    "renew": 2,
    "upload": 2,
    "submit": 3,
    "send_event": 9,
    "decide": 4,
    "escalate": 9,
    "cancel": 3,
    "list_runs": 2,
}
# The same when this process made the run's last write and decides from its snapshot (runs/snapshots.py):
# a write to a run reads nothing of the run, its steps, its lease or its requestId first.
ON_A_SNAPSHOT = {
    **BUDGET, "claim": 1, "renew": 1, "submit": 2, "send_event": 8, "decide": 3, "escalate": 8, "cancel": 2,
}


class Wire:
    """Count the round trips of what runs inside, from libpq's trace of the connection."""

    def __init__(self):
        self.count = 0

    def __enter__(self):
        connection.ensure_connection()
        self.file = tempfile.TemporaryFile()
        self.pgconn = connection.connection.pgconn
        self.pgconn.trace(self.file.fileno())
        self.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return self

    def __exit__(self, *exc):
        self.pgconn.untrace()
        self.file.seek(0)
        lines = self.file.read().decode(errors="replace").splitlines()
        self.file.close()
        self.count = sum(1 for line in lines if line.startswith("B\t") and "\tReadyForQuery\t" in line)
        self.sent = [line.split("\t", 3)[3][:160] for line in lines if line.startswith("F\t") and ("\tQuery\t" in line or "\tParse\t" in line)]


def trips(call) -> int:
    with Wire() as wire:
        call()
    if os.environ.get("SHOW_TRIPS"):
        print("\n".join(wire.sent))
    return wire.count


@pytest.mark.parametrize("snapshots", [0, 256], ids=["reading", "on-a-snapshot"])
def test_every_tool_stays_within_its_round_trips(publish, agent, person_caller, settings, snapshots):
    settings.RUN_SNAPSHOTS = snapshots
    budget = ON_A_SNAPSHOT if snapshots else BUDGET
    if connection.vendor != "postgresql":
        pytest.skip("round trips are counted on PostgreSQL's wire protocol (DATABASE_URL is not PostgreSQL)")
    publish(FLOW)
    checker = person_caller("c@example.com", groups=["checkers"])
    operator = person_caller("op@example.com", operator=True)
    measured = {}

    def run_once(record: bool):
        def measure(tool, call):
            if record and os.environ.get("SHOW_TRIPS"):
                print("---", tool)
            count = trips(call)
            if record:
                measured[tool] = max(measured.get(tool, 0), count)

        measure("describe", lambda: agent("describe"))
        measure("list_processes", lambda: agent("list_processes"))
        started = {}
        measure("start_run", lambda: started.update(agent("start_run", process="round-trips", inputs={}, requestId=rid())))
        run_id = started["run"]["id"]
        measure("get_work", lambda: agent("get_work", limit=5))
        claimed = {}
        measure("claim", lambda: claimed.update(agent("claim", runId=run_id, stepId="work", requestId=rid())))
        renewed = {}
        measure("renew", lambda: renewed.update(agent("renew", token=claimed["token"], progress="p", requestId=rid())))
        uploaded = {}
        measure("upload", lambda: uploaded.update(agent(
            "upload", fileName="a.txt", contentType="text/plain",
            contentBase64=base64.b64encode(b"abc").decode(), requestId=rid())))
        measure("submit", lambda: agent(
            "submit", token=renewed["token"], output={"n": 1}, summary="s",
            evidence=[{"kind": "file", "ref": uploaded["id"]}], requestId=rid()))
        measure("send_event", lambda: agent("send_event", runId=run_id, name="settled", requestId=rid()))
        measure("get_run", lambda: agent("get_run", runId=run_id))
        [item] = agent("get_run", runId=run_id)["workItems"]
        measure("decide", lambda: checker(
            "decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved",
            requestId=rid()))
        other = agent("start_run", process="round-trips", inputs={}, requestId=rid())["run"]["id"]
        token = agent("claim", runId=other, stepId="work", requestId=rid())["token"]
        measure("escalate", lambda: agent("escalate", token=token, note="stuck", requestId=rid()))
        measure("cancel", lambda: operator("cancel", runId=other, reason="r", requestId=rid()))
        measure("list_runs", lambda: agent("list_runs", limit=5))

    # Warm: a process keeps the published versions it has read, and psycopg prepares a statement in a
    # round trip of its own once, when its text runs for the time after the connection's prepare_threshold.
    connection.ensure_connection()
    for _ in range((connection.connection.prepare_threshold or 0) + 1):
        run_once(record=False)
    run_once(record=True)
    print("round trips per tool", measured)
    assert set(measured) == set(budget)
    over = {tool: (count, budget[tool]) for tool, count in measured.items() if count > budget[tool]}
    assert not over, f"over budget (measured, budget): {over}"
