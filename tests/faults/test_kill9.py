"""An app server killed with kill -9 in the middle of a load run loses no acknowledged write (issue 7 §2).

Sixteen agent threads drive one-step runs (start_run, get_work, claim, submit) against gunicorn
with two workers; after a few seconds the whole gunicorn process group gets SIGKILL. A fresh
server then has to show every write that was answered ok: the run exists, the claim's lease
exists, the submitted step is done; and replaying each of those calls with its requestId gives
back the very answer the agent first got (a claim: the same token).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.agents import ONE_STEP
from tests.faults import harness
from tests.faults.harness import CallLog, Client, Server, ToolFailed

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

AGENTS = 8
THREADS = 16
LOAD_SECONDS = 3.0


def agent_loop(client: Client, stop: threading.Event, index: int, refused: list) -> None:
    """One agent doing one-step runs until told to stop or the server is gone."""
    n = 0
    while not stop.is_set():
        try:
            run_id = client.tool("start_run", process="bench-one", inputs={"ticket": f"T-{index}-{n}"})["run"]["id"]
            client.tool("get_work", process="bench-one", limit=5)
            claimed = client.tool("claim", runId=run_id, stepId="work")
            client.tool("submit", token=claimed["token"], output={"result": f"ok-{index}-{n}"}, summary="Done.")
        except ToolFailed as failed:
            if failed.call.failure is None:  # the server answered, and not ok: that is a finding
                refused.append(failed.call)
            return  # no answer: the server is gone
        n += 1


def test_kill9_mid_load_loses_no_acknowledged_write(logs):
    began = time.monotonic()
    url = harness.fault_database("fault_kill9")
    info = harness.setup_database(url, {"processes": [{"text": ONE_STEP}], "agents": AGENTS})

    log = CallLog()
    refused: list = []
    first = Server(url, logs, "kill9-first", workers=2)
    try:
        tokens = harness.bearer_tokens(first, info["agents"])
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=agent_loop,
                args=(Client(first.port, tokens[i % AGENTS], log, agent=i % AGENTS), stop, i, refused),
                daemon=True,
            )
            for i in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        time.sleep(LOAD_SECONDS)
        killed_at = time.monotonic()
        first.kill9()
        stop.set()
        for thread in threads:
            thread.join(40)
        assert not any(thread.is_alive() for thread in threads), "an agent thread did not notice the kill"
    finally:
        first.stop()

    calls = list(log)
    assert not refused, "the server refused calls under plain load:\n" + "\n".join(c.describe() for c in refused[:10])
    assert not [c for c in calls if c.is_server_error], "5xx answers before the kill"
    acked = [c for c in calls if c.ok and c.tool in harness.WRITE_TOOLS]
    in_flight = [c for c in calls if c.failure is not None and c.started <= killed_at]
    per_tool = Counter(c.tool for c in acked)
    assert per_tool["start_run"] and per_tool["claim"] and per_tool["submit"], per_tool
    assert in_flight, "the kill hit no call in flight; the load did not overlap it"
    assert first.process.returncode == -9

    second = Server(url, logs, "kill9-second", workers=2)
    try:
        # 1. Every acknowledged write is in the database.
        request_ids = {c.arguments["requestId"]: c.tool for c in acked}
        recorded = dict(harness.sql(url, "SELECT request_id, tool FROM runs_idempotencyrecord WHERE request_id = ANY(%s)",
                                    (list(request_ids),)))
        missing = {rid: tool for rid, tool in request_ids.items() if recorded.get(rid) != tool}
        assert not missing, f"{len(missing)} acknowledged writes have no idempotency record: {list(missing.items())[:5]}"

        started = {harness.run_pk(c.data["run"]["id"]) for c in acked if c.tool == "start_run"}
        present = {row[0] for row in harness.sql(url, "SELECT id FROM runs_run WHERE id = ANY(%s)", (list(started),))}
        assert started == present, f"acknowledged runs missing: {sorted(started - present)[:10]}"

        claims = {harness.lease_id(c.data["token"]): harness.run_pk(c.arguments["runId"]) for c in acked
                  if c.tool == "claim"}
        leases = dict(harness.sql(
            url, "SELECT l.public_id, l.run_id FROM runs_lease l JOIN runs_runstep s ON s.id = l.step_id "
                 "WHERE l.public_id = ANY(%s) AND s.step_id = 'work'", (list(claims),)))
        assert leases == claims, f"acknowledged claims without their lease: {sorted(set(claims) - set(leases))[:5]}"
        states = dict(harness.sql(
            url, "SELECT run_id, state FROM runs_runstep WHERE step_id = 'work' AND run_id = ANY(%s)",
            (list(claims.values()),)))
        lost = {run: state for run, state in states.items() if state not in ("claimed", "done")}
        assert not lost, f"claimed steps that lost their claim: {lost}"

        submitted = {harness.run_pk(c.data["run"]["id"]) for c in acked if c.tool == "submit"}
        assert all(c.data["run"]["state"] == "ended" for c in acked if c.tool == "submit")
        finished = harness.sql(
            url, "SELECT r.id, r.state, r.outcome, s.state, s.attempt FROM runs_run r "
                 "JOIN runs_runstep s ON s.run_id = r.id AND s.step_id = 'work' WHERE r.id = ANY(%s)",
            (list(submitted),))
        assert len(finished) == len(submitted)
        wrong = [row for row in finished if row[1:] != ("ended", "completed", "done", 1)]
        assert not wrong, f"acknowledged submissions not done in the database: {wrong[:5]}"

        # 2. Replaying every acknowledged call with its requestId gives the original answer.
        def replay(call):
            return call, Client(second.port, tokens[call.agent]).call(call.tool, dict(call.arguments))

        with ThreadPoolExecutor(8) as pool:
            replays = list(pool.map(replay, acked))
        differ = [(c, again) for c, again in replays if not again.ok or again.data != c.data]
        assert not differ, f"{len(differ)} replays differ, first: {differ[0][0].describe()} then {differ[0][1].describe()}"
        assert all(again.data["token"] == c.data["token"] for c, again in replays if c.tool == "claim")

        # 3. A write cut off by the kill, sent again with its requestId, gets a definitive answer, and
        # a start_run that had committed unseen does not start a second run.
        in_flight_writes = [c for c in in_flight if c.tool in harness.WRITE_TOOLS]
        with ThreadPoolExecutor(8) as pool:
            resent = list(pool.map(replay, in_flight_writes))
        unanswered = [again for _, again in resent if not again.ok]
        assert not unanswered, "a write cut off by the kill failed when sent again: " + unanswered[0].describe()
        runs_in_db = harness.sql(url, "SELECT count(*) FROM runs_run")[0][0]
        assert runs_in_db == len(started | {harness.run_pk(a.data["run"]["id"]) for c, a in resent if c.tool == "start_run"})
        assert not first.tracebacks() and not second.tracebacks(), (first.tracebacks() + second.tracebacks())[0]
        # 4. What the servers themselves wrote holds no bearer or claim token.
        logs = "".join(server.stderr() + server.stdout() for server in (first, second))
        secrets = [*tokens, *(c.data["token"] for c in acked if c.tool == "claim")]
        assert not [secret for secret in secrets if secret in logs], "a token reached the server's log"
    finally:
        second.stop()

    harness.report(
        "kill -9",
        calls=len(calls),
        acknowledged_writes=dict(per_tool),
        in_flight_at_kill=len(in_flight),
        in_flight_tools=dict(Counter(c.tool for c in in_flight)),
        resent_in_flight_writes=len(resent),
        runs_in_db=runs_in_db,
        replays=len(replays),
        seconds=round(time.monotonic() - began, 1),
    )
    harness.drop_database("fault_kill9")
