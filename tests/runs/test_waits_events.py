"""Waits, wait_until, wait_for with events and timeouts (spec §2.2, §3.6)."""

import pytest

from tests.runs.conftest import age, rid, step_state

WAITS = """---
name: waits
description: A wait, then a wait until an input time, then an agent.
inputs:
  at: datetime
steps:
  - id: pause
    wait: 1h
  - id: until
    wait_until: inputs.at
  - id: work
    agent: Work.
  - id: done
    finish: ok
---
"""

EVENTS = """---
name: events
description: Wait for an event, with a timeout to a fallback.
steps:
  - id: settle
    wait_for: invoice-settled
    timeout: 2d
    on_timeout: chase
    next: verify
  - id: verify
    agent: Verify.
    next: done
  - id: chase
    agent: Chase.
    next: done
  - id: done
    finish: ok
---
"""


def test_wait_then_a_past_wait_until_continues_at_once(publish, agent):
    # spec §2.2: a time already past continues at once
    publish(WAITS)
    view = agent.write("start_run", process="waits", inputs={"at": "2020-01-01T00:00:00Z"})
    run_id = view["run"]["id"]
    assert view["run"]["state"] == "waiting" and step_state(view, "pause") == "waiting"
    assert agent("get_work")["items"] == []
    age(run_id, 3601)
    assert [i["stepId"] for i in agent("get_work")["items"]] == ["work"]
    view = agent("get_run", runId=run_id)
    assert step_state(view, "pause") == "done" and step_state(view, "until") == "done"
    assert view["data"]["steps"]["pause"]["by"] == "server"
    assert view["data"]["steps"]["until"]["by"] == "server"
    assert view["run"]["state"] == "active"


def test_wait_until_in_the_future_waits_for_that_time(publish, agent):
    publish(WAITS)
    run_id = agent.write("start_run", process="waits", inputs={"at": "2999-01-01T00:00:00+02:00"})["run"]["id"]
    age(run_id, 3601)
    view = agent("get_run", runId=run_id)
    assert step_state(view, "pause") == "done" and step_state(view, "until") == "waiting"


def test_the_sweep_applies_waits_without_any_read(publish, agent):
    from runs import timers

    publish(WAITS)
    run_id = agent.write("start_run", process="waits", inputs={"at": "2020-01-01T00:00:00Z"})["run"]["id"]
    age(run_id, 3601)
    assert timers.sweep() == 1
    from runs.models import RunStep

    assert RunStep.objects.get(run_id=int(run_id[2:]), step_id="work").state == "ready"
    assert timers.sweep() == 0


def test_wait_until_on_a_missing_value_fails_the_run(publish, agent):
    # spec §3.5: a wait_until value that is missing or not a datetime fails that step with by: server
    publish("""---
name: wait-output
description: Wait until a time an agent gives.
steps:
  - id: plan
    agent: Plan.
    output:
      at: { type: datetime, optional: true }
  - id: until
    wait_until: steps.plan.output.at
  - id: done
    finish: ok
---
""")
    run_id = agent.write("start_run", process="wait-output", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="plan")["token"]
    view = agent.write("submit", token=token, output={}, summary="No date.")
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "failed"
    assert view["run"]["ended"]["by"] == "server" and "steps.plan.output.at is missing" in view["run"]["ended"]["note"]
    assert step_state(view, "until") == "failed"
    assert view["data"]["steps"]["until"]["decision"] == "failed"
    assert view["data"]["steps"]["until"]["by"] == "server"


def test_event_sent_before_the_wait_is_ready_is_held_then_consumed(publish, agent):
    # spec §3.6
    publish("""---
name: later-event
description: Work first, then wait for an event.
steps:
  - id: work
    agent: Work.
  - id: settle
    wait_for: settled
  - id: done
    finish: ok
---
""")
    run_id = agent.write("start_run", process="later-event", inputs={})["run"]["id"]
    held = agent.write("send_event", runId=run_id, name="settled", data={"amount": 12.5})
    assert held == {"consumedBy": None}
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    view = agent.write("submit", token=token, output={}, summary="Done.")
    assert view["run"]["outcome"] == "ok"
    record = view["data"]["steps"]["settle"]
    assert record["output"] == {"amount": 12.5} and record["by"] == agent.identity.ref


def test_event_sent_after_the_wait_is_ready_is_consumed_at_once(publish, agent):
    publish(EVENTS)
    run_id = agent.write("start_run", process="events", inputs={})["run"]["id"]
    assert agent.write("send_event", runId=run_id, name="other-event") == {"consumedBy": None}
    assert agent.write("send_event", runId=run_id, name="invoice-settled") == {"consumedBy": "settle"}
    view = agent("get_run", runId=run_id)
    assert step_state(view, "verify") == "ready" and view["data"]["steps"]["settle"]["output"] == {}
    # One delivery satisfies one wait: a second event of the same name is held, not delivered.
    assert agent.write("send_event", runId=run_id, name="invoice-settled") == {"consumedBy": None}


def test_timeout_continues_at_on_timeout(publish, agent):
    publish(EVENTS)
    run_id = agent.write("start_run", process="events", inputs={})["run"]["id"]
    age(run_id, 2 * 86400 + 1)
    view = agent("get_run", runId=run_id)
    assert step_state(view, "settle") == "done" and step_state(view, "chase") == "ready"
    assert step_state(view, "verify") is None


def test_held_events_are_consumed_oldest_first(publish, agent):
    publish("""---
name: two-waits
description: Two waits on one event name.
steps:
  - id: first
    wait_for: ping
  - id: second
    wait_for: ping
  - id: done
    finish: ok
---
""")
    run_id = agent.write("start_run", process="two-waits", inputs={})["run"]["id"]
    assert agent.write("send_event", runId=run_id, name="ping", data={"n": 1}) == {"consumedBy": "first"}
    assert agent.write("send_event", runId=run_id, name="ping", data={"n": 2}) == {"consumedBy": "second"}
    view = agent("get_run", runId=run_id)
    assert view["data"]["steps"]["first"]["output"] == {"n": 1}
    assert view["data"]["steps"]["second"]["output"] == {"n": 2}
    assert view["run"]["outcome"] == "ok"


def test_held_events_are_discarded_when_the_run_ends(publish, agent):
    from runs.models import Event

    publish(EVENTS)
    run_id = agent.write("start_run", process="events", inputs={})["run"]["id"]
    agent.write("send_event", runId=run_id, name="never-waited")
    agent.write("send_event", runId=run_id, name="invoice-settled")
    token = agent.write("claim", runId=run_id, stepId="verify")["token"]
    agent.write("submit", token=token, output={}, summary="ok")
    assert Event.objects.get(name="never-waited").discarded is True
    error = agent.fails("send_event", "conflict", runId=run_id, name="late", requestId=rid())
    assert error["issues"] == ["run_ended"]


def test_event_names_and_sizes_are_checked(publish, agent, person_caller, settings):
    publish(EVENTS)
    run_id = agent.write("start_run", process="events", inputs={})["run"]["id"]
    assert agent.fails("send_event", "invalid", runId=run_id, name="Bad Name", requestId=rid())["issues"] == [
        "name: must match ^[a-z][a-z0-9_-]{0,63}$"
    ]
    settings.RUN_DATA_BYTES = 100
    agent.fails("send_event", "invalid", runId=run_id, name="big", data={"x": "y" * 200}, requestId=rid())
    person = person_caller("p@example.com")
    person.fails("send_event", "forbidden", runId=run_id, name="ping", requestId=rid())
    operator = person_caller("op@example.com", operator=True)
    assert operator.write("send_event", runId=run_id, name="invoice-settled") == {"consumedBy": "settle"}


def _due_and_ready(publish, agent):
    """Three runs due, woken an hour, a day and a minute ago, and three steps ready for an agent."""
    from tests.runs.test_agent_loop import ONE_STEP

    publish(WAITS)
    publish(ONE_STEP)
    due = []
    for seconds in (3601, 86400, 60 + 3600):
        due.append(agent.write("start_run", process="waits", inputs={"at": "2999-01-01T00:00:00Z"})["run"]["id"])
        age(due[-1], seconds)
    for ticket in "abc":
        agent.write("start_run", process="one-step", inputs={"ticket": ticket})


def _ready_query(org, kind="agent"):
    from base import sql
    from runs.models import RunStep

    return (
        f"SELECT {sql.columns(RunStep, 't')} FROM runs_runstep t WHERE t.organization_id = %s AND t.kind = %s"
        " AND t.state = %s ORDER BY t.ready_since, t.id LIMIT %s",
        [org.pk, kind, "ready", 2],
    )


def test_due_runs_and_ready_work_come_as_the_two_reads_would_give_them(publish, agent, org):
    # spec §3.6: every read that lists work catches up first; one statement reads both (runs.timers.due_beside)
    from base import sql
    from runs import timers

    def both(kind="agent"):
        ready = _ready_query(org, kind)
        apart = sql.fetch_many([timers.due_query(organization=org)])[0], sql.fetch(*ready)
        together = timers.due_beside(ready, organization=org, order="q.ready_since, q.id")
        assert together == apart
        return together

    assert both() == ([], [])  # nothing at all: the keys due are NULL and no row is ready
    _due_and_ready(publish, agent)
    due, ready = both()
    assert len(due) == 3 and len(ready) == 2  # soonest first; the limit holds
    assert both(kind="person") == (due, [])  # runs due, and nothing ready of the kind asked for
    timers.catch_up_runs(due)
    due, ready = both()
    assert due == [] and len(ready) == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_get_work_reads_in_one_statement_the_database_prepares(publish, agent, org):
    # Two statements in one round trip are planned every time they come; one is prepared once it repeats.
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (DATABASE_URL is not PostgreSQL)")
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        pytest.skip("preparing is turned off (DATABASE_PREPARE_THRESHOLD=0)")
    _due_and_ready(publish, agent)
    for _ in range(8):
        items = agent("get_work")["items"]
    # The runs due were caught up by the first (each on to its next wait): the one-step runs' work is ready.
    assert [item["process"] for item in items] == ["one-step"] * 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["%array_agg(id ORDER BY wake_at)%"])
        (prepared,) = cursor.fetchone()
    assert prepared >= 1
