"""Latency and SQL queries per call with 1k, 10k and 100k runs in the database (10% with ready agent steps).

    python bench/scale.py [--sizes 1000,10000,100000] [--samples 30]

Calls the tools in-process (Django's test client, no HTTP) against PostgreSQL, so the figures are
the server's own cost per call. Also times `submit` on a step with 50 earlier attempts in its history.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import database_settings, measure, recreate_database, setup_django

LOOP = """---
name: bench-loop
description: An agent works; a person sends it back or approves.
inputs:
  ticket: string
steps:
  - id: work
    agent: Work.
    output:
      n: number
  - id: check
    person: checkers
    approve: Check it.
    on_reject: work
  - id: done
    finish: ok
---
"""


def grow(version, organization, target: int, existing: int) -> None:
    """Add runs in bulk until there are `target`: 10% with a ready agent step, the rest waiting on a person."""
    from django.utils import timezone

    from runs.models import Run, RunStep

    now = timezone.now()
    batch = 5000
    while existing < target:
        count = min(batch, target - existing)
        runs = Run.objects.bulk_create(
            Run(organization=organization, version=version, process_name="bench-loop", started_by="a_0",
                data={"inputs": {"ticket": f"T{existing + i}"}, "steps": {}}, started_at=now, updated_at=now,
                state="active" if (existing + i) % 10 == 0 else "waiting")
            for i in range(count)
        )
        rows = []
        copies = {"process_name": "bench-loop", "version": version, "mode": "live"}
        for index, run in enumerate(runs):
            ready = (existing + index) % 10 == 0
            rows.append(RunStep(run=run, organization=organization, **copies, step_id="work", position=0, kind="agent",
                                state="ready" if ready else "done", attempt=1, ready_since=now, ready_seq=1))
            rows.append(RunStep(run=run, organization=organization, **copies, step_id="check", position=1, kind="approve",
                                state=None if ready else "waiting"))
            rows.append(RunStep(run=run, organization=organization, **copies, step_id="done", position=2, kind="finish"))
        RunStep.objects.bulk_create(rows, batch_size=5000)
        existing += count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    # The notices a submit owes go to memory: the console's printing them is not the server's cost.
    os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
    setup_django(recreate_database("bench_scale"))
    from django.db import connection
    from rest_framework.test import APIClient

    from accounts.identity import Identity
    from accounts.models import Agent, Group, Membership, Organization, User
    from processes.models import ProcessVersion
    from processes.publishing import import_process

    org = Organization.objects.get(slug="default")
    import_process(organization=org, text=LOOP, bindings={"checkers": "checkers"}, publish=True)
    version = ProcessVersion.objects.get(process__name="bench-loop")
    agent = APIClient()
    agent.force_authenticate(token=Identity.for_agent(Agent.objects.create(organization=org, name="scale")))
    person_user = User.objects.create_user("checker@example.com", "x")
    Membership.objects.create(user=person_user, organization=org)
    Group.objects.get(organization=org, name="checkers").members.add(person_user)
    person = APIClient()
    person.force_authenticate(user=person_user, token=Identity.for_user(User.objects.get(pk=person_user.pk)))

    def tool(client, name, **arguments):
        if name not in ("get_work", "get_run", "list_runs"):
            arguments.setdefault("requestId", str(uuid.uuid4()))
        body = client.post(f"/api/tools/{name}", arguments, format="json").json()
        assert body["ok"], body
        return body["data"]

    existing = 0
    print(database_settings() + "\n")
    print(f"{'runs':>8} {'tool':<10}{'mean ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'queries':>9}")
    for size in [int(s) for s in args.sizes.split(",")]:
        grow(version, org, size, existing)
        existing = size
        with connection.cursor() as cursor:
            # The statistics a database keeps by itself (autovacuum analyzes a table after a bulk
            # load): the planner picks the indexes for the tables' sizes, as it would in service.
            cursor.execute("ANALYZE")
        run_id = tool(agent, "start_run", process="bench-loop", inputs={"ticket": "probe"})["run"]["id"]
        figures = {
            "get_work": measure(lambda: tool(agent, "get_work", limit=20), args.samples),
            "get_run": measure(lambda run_id=run_id: tool(agent, "get_run", runId=run_id), args.samples),
            "list_runs": measure(lambda: tool(agent, "list_runs", limit=20), args.samples),
        }

        def submit_one():
            started = tool(agent, "start_run", process="bench-loop", inputs={"ticket": "s"})["run"]["id"]
            token = tool(agent, "claim", runId=started, stepId="work")["token"]
            return lambda: tool(agent, "submit", token=token, output={"n": 1}, summary="s")

        submits = [submit_one() for _ in range(args.samples)]
        iterator = iter(submits)
        figures["submit"] = measure(lambda it=iterator: next(it)(), args.samples)
        for name, (mean, p50, p95, queries) in figures.items():
            print(f"{size:>8} {name:<10}{mean:>9.1f}{p50:>9.1f}{p95:>9.1f}{queries:>9}")

    # A step with 50 earlier attempts in its history.
    run_id = tool(agent, "start_run", process="bench-loop", inputs={"ticket": "history"})["run"]["id"]
    for _ in range(50):
        token = tool(agent, "claim", runId=run_id, stepId="work")["token"]
        view = tool(agent, "submit", token=token, output={"n": 1}, summary="s")
        item = view["workItems"][0]
        tool(person, "decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="rejected",
             note="again")
    token = tool(agent, "claim", runId=run_id, stepId="work")["token"]
    mean, p50, p95, queries = measure(lambda: tool(agent, "submit", token=token, output={"n": 1}, summary="s"), 1)
    history = len(tool(agent, "get_run", runId=run_id)["data"]["steps"]["work"]["history"])
    print(f"submit on a step with {history} earlier attempts: {mean:.1f} ms, {queries} queries")


if __name__ == "__main__":
    main()
