"""Each way a run leaves a step is kept as one passage, written with the write that took it (runs.passages)."""

from __future__ import annotations

from runs.models import Passage
from runs.tools import call_tool
from tests.runs.conftest import age, rid

FLOW = """---
name: flow
description: An agent drafts, a person approves or sends it back, an agent files it.
inputs:
  ticket: string
steps:
  - id: draft
    agent: Draft it.
    output:
      text: string
    due: 1h
  - id: review
    person: reviewers
    approve: Check the draft.
    on_reject: draft
    next: file
  - id: file
    agent: File it.
    output:
      ref: string
  - id: done
    finish: filed
---
"""

STRICT = """---
name: strict
description: A person approves; a rejection has nowhere to go back to.
inputs:
  ticket: string
steps:
  - id: check
    person: reviewers
    approve: Check it.
  - id: done
    finish: ok
---
"""


def passages(run_id: str) -> list[tuple]:
    return list(Passage.objects.filter(run_id=int(run_id[2:])).order_by("pk")
                .values_list("step_id", "how", "went_to", "outcome", "by"))


def work(agent, run_id: str, step_id: str, output: dict) -> dict:
    token = agent.write("claim", runId=run_id, stepId=step_id)["token"]
    return agent.write("submit", token=token, output=output, summary="Done.")


def review(person, view: dict, decision: str, **extra) -> dict:
    [item] = view["workItems"]
    return call_tool(person, "decide", {**item["decide"]["arguments"], "requestId": rid(), "decision": decision,
                                        **extra})


def test_routes_a_rejection_loop_and_the_finish_are_each_one_passage(publish, agent, make_person):
    publish(FLOW)
    reviewer = make_person("r@example.com", groups=["reviewers"])
    run_id = agent.write("start_run", process="flow", inputs={"ticket": "T"})["run"]["id"]
    view = work(agent, run_id, "draft", {"text": "v1"})
    view = review(reviewer, view, "rejected", note="Too short.")
    view = work(agent, run_id, "draft", {"text": "v2"})
    view = review(reviewer, view, "approved")
    view = work(agent, run_id, "file", {"ref": "F-1"})
    assert view["run"]["outcome"] == "filed"
    me, them = agent.identity.ref, reviewer.ref
    assert passages(run_id) == [
        ("draft", "passed", "review", None, me),
        ("review", "rejected", "draft", None, them),
        ("draft", "passed", "review", None, me),
        ("review", "passed", "file", None, them),
        ("file", "passed", "done", None, me),
        ("done", "finished", None, "filed", "server"),
    ]
    rows = list(Passage.objects.filter(run_id=int(run_id[2:])).order_by("pk"))
    assert all(row.seconds is not None and row.seconds >= 0 for row in rows)
    assert {(row.process_name, row.version_id, row.organization_id) for row in rows} == {
        ("flow", rows[0].version_id, agent.identity.organization.pk)}


def test_a_failed_step_a_rejection_with_nowhere_back_and_a_cancel_each_end_the_run_failing(
    publish, agent, make_person
):
    publish(FLOW)
    publish(STRICT)
    reviewer = make_person("r@example.com", groups=["reviewers"])
    ops = make_person("ops@example.com", operator=True)
    failing = agent.write("start_run", process="flow", inputs={"ticket": "T"})["run"]["id"]
    review(reviewer, work(agent, failing, "draft", {"text": "v1"}), "failed", note="Wrong customer.")
    strict = agent.write("start_run", process="strict", inputs={"ticket": "T"})
    review(reviewer, strict, "rejected", note="No.")
    cancelled = agent.write("start_run", process="flow", inputs={"ticket": "T"})["run"]["id"]
    call_tool(ops, "cancel", {"runId": cancelled, "reason": "Duplicate.", "requestId": rid()})
    assert passages(failing)[-1] == ("review", "failed", None, "failed", reviewer.ref)
    assert passages(strict["run"]["id"]) == [("check", "failed", None, "rejected", reviewer.ref)]
    assert passages(cancelled) == [("draft", "failed", None, "cancelled", ops.ref)]
    assert Passage.objects.get(run_id=int(cancelled[2:])).seconds is None


def test_a_refused_submission_and_an_ended_lease_count_against_the_agent(publish, agent, make_agent, settings):
    publish(FLOW)
    run_id = agent.write("start_run", process="flow", inputs={"ticket": "T"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    agent.fails("submit", "not_accepted", token=token, output={"text": 5}, summary="Wrong.", requestId=rid())
    age(run_id, settings.LEASE_SECONDS + 1)
    agent("get_run", runId=run_id)  # the read catches the run up: the lease has ended
    me = agent.identity.ref
    assert passages(run_id) == [("draft", "refused", None, None, me), ("draft", "expired", None, None, me)]


def test_the_sweep_counts_the_days_just_over_for_every_version_once(publish, agent, monkeypatch):
    import datetime as dt

    from django.utils import timezone

    from runs import rollups, timers
    from runs.models import PassageDay, PassagesRolled

    version = publish(FLOW)
    run_id = agent.write("start_run", process="flow", inputs={"ticket": "T"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    agent.fails("submit", "not_accepted", token=token, output={"text": 5}, summary="Wrong.", requestId=rid())
    Passage.objects.update(at=timezone.now() - dt.timedelta(days=2))  # the day before yesterday
    monkeypatch.setattr(rollups._Swept, "until", None)
    timers.sweep()
    counted = PassageDay.objects.filter(version=version).values_list("step_id", "how", "count")
    assert list(counted) == [("draft", "refused", 1)]
    assert PassagesRolled.objects.get(version=version).until == rollups.countable_until(timezone.now())
    Passage.objects.update(at=timezone.now() - dt.timedelta(days=2))
    timers.sweep()  # once a day: nothing is counted twice
    assert PassageDay.objects.filter(version=version).count() == 1
