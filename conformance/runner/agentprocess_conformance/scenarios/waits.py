"""Waits and events: held events, oldest first, wait_until and timeouts (spec §2.2, §3.6).

customer-offboarding waits until `effectiveAt` (given in the past) and then for the event
`final-invoice-settled`; blog-publication waits until `publishAt` (given a few seconds ahead). The
timeout check needs the runner's probe process `conformance-timeout`, whose wait times out after a minute.
"""

from __future__ import annotations

import datetime as dt

from ..flows import (
    decide,
    item_for,
    need_wait,
    now_plus,
    parse_time,
    start,
    state,
    wait_for,
    work_agent_step,
)
from ..framework import Skip, section

OFFBOARDING = "customer-offboarding"
BLOG = "blog-publication"
PROBE = "conformance-timeout"
EVENT = "final-invoice-settled"
PAST = "2020-01-01T00:00:00Z"
FUTURE_SECONDS = 8.0
TIMEOUT_SECONDS = 60.0
SLACK_SECONDS = 15.0


def to_settlement(context, run_id: str, view: dict) -> dict:
    """Authorize the offboarding, then work its agent steps until the run waits for the settlement event."""
    _, owner = context.person(role="account-owner")
    view = decide(owner, item_for(view, "authorize"), "approved")
    work_agent_step(context, context.agent, run_id, "cancel_services")
    return work_agent_step(context, context.agent, run_id, "final_invoice", next="settlement_event",
                           reason="The balance is open.")


@section("waits", "Waits and events", "spec §2.2; spec §3.6", [
    ("wait.held", "an event that arrives before its wait is ready is held: consumedBy null", "spec §3.6; tools.md send_event"),
    ("wait.past", "a wait_until time already past continues at once, recorded by the server", "spec §2.2; spec §3.1"),
    ("wait.oldest_first", "held events are consumed oldest first; the event's data becomes the wait's output",
     "spec §3.6"),
    ("wait.consumed_at_once", "an event for a ready wait is consumed at once; one delivery satisfies one wait",
     "spec §3.6; tools.md send_event"),
    ("wait.event_name", "an event name outside the step id pattern is invalid", "spec §3.6"),
    ("wait.event_forbidden", "a person who is not an operator may not send an event", "spec §3.6; tools.md send_event"),
    ("wait.until_future", "a wait_until time ahead holds the run waiting, then continues at that time", "spec §2.2"),
    ("wait.timeout", "a wait_for whose timeout passes continues at on_timeout", "spec §2.2"),
])
def waits(context, rec):
    agent = context.agent
    context.need_process(OFFBOARDING)
    context.need_tool("send_event")
    _, owner = context.person(role="account-owner")
    # The wait_until run starts first, so that its few seconds pass while the event checks run.
    try:
        future, future_problem = begin_until_future(context), None
    except Exception as exc:
        future, future_problem = None, exc
    inputs = {"customerId": "C-conformance-events", "effectiveAt": PAST}
    view = start(context, agent, OFFBOARDING, inputs=inputs)
    run_id = view["run"]["id"]
    with rec.check("wait.held"):
        for sequence in (1, 2):
            held = agent.write("send_event", runId=run_id, name=EVENT, data={"sequence": sequence})
            assert held == {"consumedBy": None}, f"event {sequence}: {held}"
        assert agent.write("send_event", runId=run_id, name="never-waited-for") == {"consumedBy": None}
    authorized = decide(owner, item_for(view, "authorize"), "approved")
    with rec.check("wait.past"):
        assert state(authorized, "effective_time") == "done", state(authorized, "effective_time")
        assert authorized["data"]["steps"]["effective_time"].get("by") == "server", authorized["data"]["steps"]
        assert state(authorized, "cancel_services") == "ready", state(authorized, "cancel_services")
    work_agent_step(context, agent, run_id, "cancel_services")
    view = work_agent_step(context, agent, run_id, "final_invoice", next="settlement_event", reason="The balance is open.")
    with rec.check("wait.oldest_first"):
        assert state(view, "settlement_event") == "done", state(view, "settlement_event")
        output = view["data"]["steps"]["settlement_event"].get("output")
        assert output == {"sequence": 1}, f"the wait consumed {output}, not the oldest held event {{'sequence': 1}}"
        assert state(view, "verify_settlement") == "ready", state(view, "verify_settlement")
    other = start(context, agent, OFFBOARDING, inputs={**inputs, "customerId": "C-conformance-events-2"})
    waiting = to_settlement(context, other["run"]["id"], other)
    with rec.check("wait.consumed_at_once"):
        assert state(waiting, "settlement_event") == "waiting", state(waiting, "settlement_event")
        delivered = agent.write("send_event", runId=other["run"]["id"], name=EVENT, data={"paid": True})
        assert delivered == {"consumedBy": "settlement_event"}, delivered
        again = agent.write("send_event", runId=other["run"]["id"], name=EVENT, data={"paid": True})
        assert again == {"consumedBy": None}, f"a second delivery answered {again}"
    with rec.check("wait.event_name"):
        agent.fails("send_event", "invalid", runId=run_id, name="Not A Name")
    with rec.check("wait.event_forbidden"):
        _, plain = context.person(operator=False)
        plain.fails("send_event", "forbidden", runId=run_id, name="settled")
    with rec.check("wait.until_future"):
        if future_problem is not None:
            raise future_problem
        finish_until_future(context, future)
    with rec.check("wait.timeout"):
        timeout(context)


def begin_until_future(context) -> tuple[str, str]:
    """Start blog-publication to publish a few seconds ahead and bring it to its wait; check it waits."""
    context.need_process(BLOG)
    need_wait(context, FUTURE_SECONDS, "a wait_until a few seconds ahead")
    _, editor = context.person(role="editor")
    publish_at = now_plus(FUTURE_SECONDS)
    view = start(context, context.agent, BLOG, inputs={"brief": "Conformance", "slug": "conformance",
                                                       "publishAt": publish_at})
    run_id = view["run"]["id"]
    view = work_agent_step(context, context.agent, run_id, "draft")
    view = decide(editor, item_for(view, "editor_review"), "approved")
    if dt.datetime.now(dt.UTC) >= parse_time(publish_at):
        raise Skip(f"the run took longer than {FUTURE_SECONDS:.0f} s to reach its wait")
    assert state(view, "publication_time") == "waiting" and view["run"]["state"] == "waiting", \
        f"publication_time is {state(view, 'publication_time')} before {publish_at}"
    assert state(view, "publish") is None, "publish is reached before the time"
    return run_id, publish_at


def finish_until_future(context, started: tuple[str, str]) -> None:
    """Wait for the run started by begin_until_future to go on at its time."""
    run_id, _ = started

    def published():
        current = context.agent.ok("get_run", runId=run_id)
        return current if state(current, "publish") == "ready" else None

    current = wait_for(published, FUTURE_SECONDS + SLACK_SECONDS, "publish becoming ready after publishAt")
    assert current["data"]["steps"]["publication_time"].get("by") == "server", current["data"]["steps"]


def timeout(context) -> None:
    context.need_process(PROBE)
    need_wait(context, TIMEOUT_SECONDS + SLACK_SECONDS, "a wait_for timeout of one minute (the probe conformance-timeout)")
    run_id = start(context, context.agent, PROBE, inputs={})["run"]["id"]

    def timed_out():
        current = context.agent.ok("get_run", runId=run_id)
        return current if state(current, "follow_up") == "ready" else None

    current = wait_for(timed_out, TIMEOUT_SECONDS + SLACK_SECONDS, "follow_up becoming ready after the timeout")
    assert state(current, "settle") == "done" and state(current, "verify") is None, current["steps"]
