"""The operators' pages over 100,000 runs with their passages: time and SQL queries per page.

    python bench/process_map.py [--runs 100000] [--samples 20]

Bulk-inserts runs of one process (as bench/scale.py's `grow` does) started over the last 30 days, each
with the passages its steps would have written: most finished, a fifth of those after a rejection
loop, some failed or cancelled, the rest at work now (some past due, some unclaimed for hours). Then
it asks for the live map over each period, the runs at one step, the overview and each attention list
through Django's test client in this process, against PostgreSQL, as an operator.

Autovacuum may be off on a benchmark server; the load ends with VACUUM ANALYZE, as autovacuum would
have run by then, so the counts are read from the indexes alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import database_settings, measure, page, recreate_database, setup_django

FLOW = """---
name: bench-flow
description: An agent takes a request in, a person approves or sends it back, an agent fulfils it.
inputs:
  ticket: string
steps:
  - id: intake
    agent: Read the request.
    output:
      summary: string
    next:
      - { to: review, when: It can be done }
      - { to: declined, when: It cannot }
  - id: review
    person: reviewers
    approve: Approve the plan.
    due: 1d
    on_reject: intake
  - id: fulfil
    agent: Do it.
    output:
      ref: string
  - id: done
    finish: done
  - id: declined
    finish: declined
---
"""

STEPS = ("intake", "review", "fulfil", "done", "declined")
KINDS = {"intake": "agent", "review": "approve", "fulfil": "agent", "done": "finish", "declined": "finish"}


def _history(rng: random.Random, started: dt.datetime, now: dt.datetime) -> tuple[list, str, dict]:
    """One run's passages (step, how, went_to, outcome, seconds, at), its fate, and its steps' states now."""
    passages, at = [], started

    def leave(step, how, went_to=None, outcome=None, scale=3600.0):
        nonlocal at
        seconds = rng.expovariate(1 / scale)
        at = min(at + dt.timedelta(seconds=seconds), now)
        passages.append((step, how, went_to, outcome, seconds, at))

    fate = rng.random()
    if fate < 0.15:  # at work now: at intake, at review (some past due), or at fulfil
        where = rng.choice(("intake", "review", "review", "fulfil"))
        if where != "intake":
            leave("intake", "passed", "review", scale=600)
        if where == "fulfil":
            leave("review", "passed", "fulfil", scale=7200)
        return passages, "active", {where: "waiting" if where == "review" else "ready"}
    if fate < 0.18:  # declined at intake
        leave("intake", "passed", "declined", scale=600)
        passages.append(("declined", "finished", None, "declined", (at - started).total_seconds(), at))
        return passages, "declined", {}
    if fate < 0.21:  # failed at review, or cancelled at intake
        leave("intake", "passed", "review", scale=600)
        if rng.random() < 0.5:
            leave("review", "failed", None, "failed", scale=7200)
        else:
            passages.append(("review", "failed", None, "cancelled", None, at))
        return passages, "failed", {}
    leave("intake", "passed", "review", scale=600)
    if rng.random() < 0.2:  # a rejection loop
        leave("review", "rejected", "intake", scale=7200)
        leave("intake", "passed", "review", scale=600)
    leave("review", "passed", "fulfil", scale=7200)
    leave("fulfil", "passed", "done", scale=1800)
    passages.append(("done", "finished", None, "done", (at - started).total_seconds(), at))
    return passages, "done", {}


def _ending(fate: str, passages: list, now: dt.datetime) -> dict:
    """A run's state, outcome and end, as its fate left them."""
    if fate == "active":
        return {"state": "active", "outcome": None, "ended": None}
    ended = {"by": "server", "at": now.isoformat(), "note": "Made by the benchmark."}
    if fate == "failed" and passages[-1][3] == "cancelled":
        return {"state": "cancelled", "outcome": None, "ended": ended}
    return {"state": "ended", "outcome": passages[-1][3], "ended": ended}


def grow(version, organization, target: int, *, seed: int = 7) -> int:
    """Bulk-insert `target` runs with their steps and passages; return how many passages."""
    from django.utils import timezone

    from runs.models import Passage, Run, RunStep

    rng = random.Random(seed)
    now = timezone.now()
    made, written, batch = 0, 0, 5000
    copies = {"process_name": "bench-flow", "version": version, "mode": "live"}
    while made < target:
        count = min(batch, target - made)
        plans = []
        for _ in range(count):
            started = now - dt.timedelta(seconds=rng.uniform(0, 30 * 86400))
            plans.append((started, *_history(rng, started, now)))
        runs = Run.objects.bulk_create(
            Run(organization=organization, version=version, process_name="bench-flow", started_by="a_0",
                data={"inputs": {"ticket": f"T{made + i}"}, "steps": {}}, started_at=started, updated_at=now,
                **_ending(fate, passages, now))
            for i, (started, passages, fate, _states) in enumerate(plans)
        )
        steps, rows = [], []
        for run, (started, passages, _fate, states) in zip(runs, plans, strict=True):
            for position, step_id in enumerate(STEPS):
                state = states.get(step_id)
                since = started + dt.timedelta(hours=rng.uniform(0, 48)) if state else None
                due = since + dt.timedelta(days=1) if state and step_id == "review" else None
                steps.append(RunStep(run=run, organization=organization, **copies, step_id=step_id,
                                     position=position, kind=KINDS[step_id], state=state, attempt=1 if state else 0,
                                     ready_since=since, due_at=due, overdue=bool(due and due <= now)))
            for step_id, how, went_to, outcome, seconds, at in passages:
                rows.append(Passage(organization=organization, run=run, process_name="bench-flow",
                                    version=version, step_id=step_id, how=how, went_to=went_to, outcome=outcome,
                                    by="a_1" if KINDS[step_id] == "agent" else "u_1", at=at, seconds=seconds))
        RunStep.objects.bulk_create(steps, batch_size=5000)
        Passage.objects.bulk_create(rows, batch_size=5000)
        made += count
        written += len(rows)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    setup_django(recreate_database("bench_process_map"))

    from django.db import connection
    from django.test import Client

    from accounts.models import Membership, Organization, User
    from processes.models import ProcessVersion
    from processes.publishing import import_process
    from runs.models import Passage

    org = Organization.objects.get(slug="default")
    import_process(organization=org, text=FLOW, bindings={"reviewers": "reviewers"}, publish=True)
    version = ProcessVersion.objects.get(process__name="bench-flow")
    started = time.perf_counter()
    passages = grow(version, org, args.runs)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(database_settings())
    print(f"{args.runs} runs and {passages} passages loaded in {time.perf_counter() - started:.0f} s\n")

    operator = User.objects.create_user("ops@example.com", "x")
    Membership.objects.create(user=operator, organization=org, is_operator=True)
    client = Client()
    client.force_login(operator)

    pages = [
        ("live map, 24 hours", "/operations/bench-flow/?period=24h"),
        ("live map, 7 days", "/operations/bench-flow/?period=7d"),
        ("live map, 30 days", "/operations/bench-flow/?period=30d"),
        ("runs at review now", "/operations/bench-flow/?period=30d&step=review"),
        ("overview, 30 days", "/operations/?period=30d"),
        ("failed, 30 days", "/runs/?attention=failed&period=30d"),
        ("past due", "/runs/?attention=overdue"),
        ("unclaimed", "/runs/?attention=unclaimed"),
        ("an agent's runs", "/runs/?attention=agent&agent=a_1&period=30d"),
    ]
    from django.utils import timezone

    from runs import rollups

    started = time.perf_counter()
    rollups.roll_up_every_version(now=timezone.now())
    print(f"the sweep counts the 30 whole days before today, the first time: {time.perf_counter() - started:.2f} s")
    today = Passage.objects.filter(at__gte=rollups.day_start(rollups.countable_until(timezone.now()))).count()
    print(f"(a day's count reads one day's passages: today has {today} so far)\n")
    print(f"{'page':<22}{'mean ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'queries':>9}")
    for label, path in pages:
        page(client, path)()  # warm
        mean, p50, p95, queries = measure(page(client, path), args.samples)
        print(f"{label:<22}{mean:>9.1f}{p50:>9.1f}{p95:>9.1f}{queries:>9}")


if __name__ == "__main__":
    main()
