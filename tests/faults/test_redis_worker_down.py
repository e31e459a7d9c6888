"""Redis and the Celery worker stopped: the API stays right, and the worker catches up once (issue 7 §2).

The server runs with REDIS_URL set and no worker or beat. With Redis shut down, the API still
answers correctly because every read and write applies time itself: an ended lease is claimable
by another agent (get_work lists it with its handoff), a passed wait continues on the next
get_run, an overdue step shows `overdue: true` and its notices are recorded. Runs nobody touches
stay as they were until Redis, a worker and beat come back: then the sweep applies their leases,
waits and deadlines, and the overdue notices (one per recipient) and their emails happen exactly
once, however many sweeps follow.

Leases last LEASE_SECONDS=2 of real time; the hour-long waits and deadlines are moved into the
past in the database, as tests/runs/conftest.py `age` does.
"""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest

from tests.faults import harness
from tests.faults.harness import Background, Client, Server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = """---
name: fault-lease
description: One agent step.
steps:
  - id: work
    agent: Do the work.
    output:
      result: string
  - id: done
    finish: completed
---
"""

WAIT = """---
name: fault-wait
description: An hour's wait, then an agent step.
steps:
  - id: pause
    wait: 1h
  - id: work
    agent: Work after the pause.
  - id: done
    finish: ok
---
"""

DUE = """---
name: fault-due
description: An agent step due within the hour.
steps:
  - id: work
    agent: Work quickly.
    due: 1h
  - id: done
    finish: ok
---
"""

REVIEW = """---
name: fault-review
description: A person approves within the hour.
steps:
  - id: review
    person: reviewer
    approve: Approve it.
    due: 1h
  - id: done
    finish: approved
---
"""

OPERATORS = ["ops1@example.com", "ops2@example.com"]
REVIEWERS = ["rev1@example.com", "rev2@example.com"]
# Overdue notices go to the step's assignees (nobody, for an agent step) and every operator.
RECIPIENTS = {"fault-due": 2, "fault-review": 4}
LEASE_SECONDS = 2
HOUR = 3601
SUBJECT = re.compile(r"Subject: (?:\[test run\] )?(.+?) in (\S+) run (r_\d+) is overdue")
SWEEP_DONE = re.compile(r"Task runs\.tasks\.sweep\[[^\]]+\] succeeded in [\d.e-]+s: (\d+)")


def step(view: dict, step_id: str) -> dict:
    return next(s for s in view["steps"] if s["id"] == step_id)


def notices(url: str, run_ids: list[str]) -> dict[str, int]:
    rows = harness.sql(url, "SELECT run_id, count(*) FROM work_notification WHERE run_id = ANY(%s) "
                            "AND kind = 'overdue' GROUP BY run_id",
                       ([harness.run_pk(r) for r in run_ids],))
    counts = {f"r_{pk}": n for pk, n in rows}
    return {r: counts.get(r, 0) for r in run_ids}


def step_rows(url: str, run_ids: list[str]) -> dict:
    rows = harness.sql(
        url, "SELECT r.id, s.step_id, s.state, s.overdue, s.attempt, r.state, r.seq, r.updated_at FROM runs_run r "
             "JOIN runs_runstep s ON s.run_id = r.id WHERE r.id = ANY(%s) ORDER BY r.id, s.position",
        ([harness.run_pk(r) for r in run_ids],))
    return {(f"r_{row[0]}", row[1]): row[2:] for row in rows}


def test_api_is_right_without_redis_and_the_worker_catches_up_once(logs, redis_url):
    began = time.monotonic()
    broker = f"redis://127.0.0.1:{harness.REDIS_PORT}/9"  # a database of its own: no other queue's messages
    url = harness.fault_database("fault_redis")
    people = [{"email": e, "operator": True} for e in OPERATORS] + [{"email": e, "groups": ["reviewers"]}
                                                                     for e in REVIEWERS]
    info = harness.setup_database(url, {
        "processes": [{"text": LEASE}, {"text": WAIT}, {"text": DUE}, {"text": REVIEW,
                                                                       "bindings": {"reviewer": "reviewers"}}],
        "agents": 2, "people": people,
    })
    assert harness.start_redis(), "Redis is not running before the test"
    marks = {"setup": time.monotonic()}
    env = {"REDIS_URL": broker, "LEASE_SECONDS": str(LEASE_SECONDS), "SWEEP_SECONDS": "1", "EMAIL_HOST": None,
           "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    server = Server(url, logs, "redis-server", workers=2, extra_env=env)
    worker = beat = None
    try:
        token_a, token_b = harness.bearer_tokens(server, info["agents"])
        a, b = Client(server.port, token_a), Client(server.port, token_b)
        assert server.health()[0] == 200

        # --- Redis down, no worker, no beat ---------------------------------------------------
        assert harness.stop_redis(), "Redis did not stop"
        marks["redis_stopped"] = time.monotonic()
        status, health = server.health()
        assert status == 503 and health["checks"]["database"] == "ok" and health["checks"]["broker"].startswith("error")

        def start(process: str) -> str:
            return a.tool("start_run", process=process, inputs={})["run"]["id"]

        # Runs the API touches while the broker is gone.
        l1, w1, d1, r1 = start("fault-lease"), start("fault-wait"), start("fault-due"), start("fault-review")
        first_token = a.tool("renew", token=_claimed_token(a, l1), progress="half way")["token"]
        harness.age_runs(url, [w1, d1, r1], HOUR)
        time.sleep(LEASE_SECONDS + 0.3)  # the lease ends in real time

        view = b.tool("get_run", runId=w1)
        assert step(view, "pause")["state"] == "done" and step(view, "work")["state"] == "ready", view["steps"]
        assert view["run"]["state"] == "active" and view["data"]["steps"]["pause"]["by"] == "server"
        view = b.tool("get_run", runId=d1)
        assert step(view, "work")["overdue"] is True
        view = b.tool("get_run", runId=r1)
        assert step(view, "review")["overdue"] is True and view["workItems"]
        [item] = b.tool("get_work", process="fault-lease")["items"]
        assert item["runId"] == l1 and item["handoff"] == {"progress": "half way"}, item
        [due_item] = b.tool("get_work", process="fault-due")["items"]
        assert due_item["runId"] == d1 and due_item["overdue"] is True
        second = b.tool("claim", runId=l1, stepId="work")
        assert second["handoff"] == {"progress": "half way"}
        stale = a.call("submit", {"token": first_token, "output": {"result": "late"}, "summary": "Late.",
                                  "requestId": "late-" + l1})
        assert stale.status == 409 and stale.code == "stale", stale.describe()
        ended = b.tool("submit", token=second["token"], output={"result": "ok"}, summary="Done.")
        assert ended["run"]["state"] == "ended"
        touched = [l1, w1, d1, r1]
        assert notices(url, [d1, r1]) == {d1: RECIPIENTS["fault-due"], r1: RECIPIENTS["fault-review"]}

        marks["touched_checked"] = time.monotonic()
        # Runs nobody touches until the worker is back.
        l2, w2, d2, r2 = start("fault-lease"), start("fault-wait"), start("fault-due"), start("fault-review")
        a.tool("renew", token=_claimed_token(a, l2), progress="a quarter")
        harness.age_runs(url, [w2, d2, r2], HOUR)
        time.sleep(LEASE_SECONDS + 0.3)
        untouched = [l2, w2, d2, r2]
        rows = step_rows(url, untouched)
        assert rows[(l2, "work")][0] == "claimed" and rows[(w2, "pause")][0] == "waiting"
        assert rows[(d2, "work")][1] is False and rows[(r2, "review")][1] is False
        assert notices(url, [d2, r2]) == {d2: 0, r2: 0}
        assert not harness.redis_up()

        # --- Redis, a worker and beat come back ----------------------------------------------
        marks["idle_checked"] = time.monotonic()
        assert harness.start_redis(), "Redis did not start again"
        marks["redis_started"] = time.monotonic()
        celery = [harness.PYTHON, "-m", "celery", "-A", "config"]
        worker = Background([*celery, "worker", "--pool", "solo", "--loglevel", "info", "-n", "fault-sweeper@%h",
                                      "--without-mingle", "--without-gossip"], url, logs, "worker", env)
        beat = Background([*celery, "beat", "--loglevel", "info", "-s", str(logs / "beat-schedule")],
                          url, logs, "beat", env)

        def caught_up() -> bool:
            rows = step_rows(url, untouched)
            return (rows[(l2, "work")][0] == "ready" and rows[(w2, "work")][0] == "ready"
                    and rows[(d2, "work")][1] is True and rows[(r2, "review")][1] is True
                    and notices(url, [d2, r2]) == {d2: RECIPIENTS["fault-due"], r2: RECIPIENTS["fault-review"]})

        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and not caught_up():
            assert worker.process.poll() is None, "the worker exited:\n" + worker.output()[-3000:]
            assert beat.process.poll() is None, "beat exited:\n" + beat.output()[-3000:]
            time.sleep(0.25)
        assert caught_up(), "the worker did not catch up:\n" + worker.output()[-3000:]
        caught_at = len(SWEEP_DONE.findall(worker.output()))
        marks["caught_up"] = time.monotonic()
        after_catch_up = step_rows(url, touched + untouched)

        # Several more sweeps change nothing and notify nobody again.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(SWEEP_DONE.findall(worker.output())) < caught_at + 3:
            time.sleep(0.25)
        sweeps = [int(n) for n in SWEEP_DONE.findall(worker.output())]
        marks["more_sweeps"] = time.monotonic()
        assert len(sweeps) >= caught_at + 3, f"only {len(sweeps)} sweeps ran:\n" + worker.output()[-3000:]
        assert sum(sweeps) == len(untouched), f"sweeps changed {sweeps}; expected the {len(untouched)} idle runs once"
        assert step_rows(url, touched + untouched) == after_catch_up, "a later sweep changed a run again"

        expected = {d1: 2, r1: 4, d2: 2, r2: 4}
        assert notices(url, list(expected)) == expected
        doubled = harness.sql(url, "SELECT user_id, run_id, step_id, count(*) FROM work_notification "
                                   "GROUP BY user_id, run_id, step_id, kind HAVING count(*) > 1")
        assert not doubled, f"notified twice: {doubled}"
        assert harness.sql(url, "SELECT count(*) FROM work_notification WHERE email_pending")[0][0] == 0
        emails = Counter(m[2] for m in SUBJECT.findall(server.stdout() + worker.output()))
        assert emails == Counter(expected), f"overdue emails sent {dict(emails)}, expected {expected}"
        server_emails = Counter(m[2] for m in SUBJECT.findall(server.stdout()))
        assert server_emails == Counter({d1: 2, r1: 4}), "the touched runs' emails come from the server"

        # The API shows the caught-up runs as the sweep left them.
        view = b.tool("get_run", runId=w2)
        assert step(view, "pause")["state"] == "done" and step(view, "work")["state"] == "ready"
        assert view["data"]["steps"]["pause"]["history"] == []
        assert step(b.tool("get_run", runId=d2), "work")["overdue"] is True
        [item] = b.tool("get_work", process="fault-lease")["items"]
        assert item["runId"] == l2 and item["handoff"] == {"progress": "a quarter"}
        assert server.health()[0] == 200
        assert not server.tracebacks(), server.tracebacks()[0]
        assert "Traceback" not in worker.output(), worker.output()[-3000:]
    finally:
        for helper in (beat, worker):
            if helper is not None:
                helper.stop()
        server.stop()
        if harness.start_redis():
            import redis

            redis.Redis.from_url(broker).flushdb()  # beat's leftover messages, in the test's own database

    harness.report(
        "redis and worker down",
        touched_runs=len(touched),
        idle_runs_caught_up=len(untouched),
        sweeps_seen=len(sweeps),
        sweep_results=sweeps,
        notices=sum(expected.values()),
        emails=sum(emails.values()),
        seconds=round(time.monotonic() - began, 1),
        phases={k: round(v - began, 1) for k, v in marks.items()},
    )
    harness.drop_database("fault_redis")


def _claimed_token(client: Client, run_id: str) -> str:
    return client.tool("claim", runId=run_id, stepId="work")["token"]
