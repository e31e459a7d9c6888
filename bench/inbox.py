"""The inbox page for a person with 1,000 open items and for one with 10 among them, and the item page of
a run with 30 completed steps.

    python bench/inbox.py [--items 1000] [--samples 20]

Renders the pages in-process (Django's test client, signed in) against PostgreSQL and prints the
time and SQL query count of each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import percentile, recreate_database, setup_django

APPROVAL = """---
name: bench-approval
description: One approval.
inputs:
  ticket: string
steps:
  - id: ok
    person: approvers
    approve: Approve the ticket.
  - id: done
    finish: ok
---
# Approval

Approve when the ticket is in order.
"""


def long_process(steps: int) -> str:
    body = "".join(f"  - id: s{i}\n    agent: Step {i}.\n    output:\n      n: number\n" for i in range(steps))
    return (
        "---\nname: bench-long\ndescription: Many agent steps, then a review.\nsteps:\n" + body
        + "  - id: review\n    person: approvers\n    approve: Review all of it.\n  - id: done\n    finish: ok\n---\n"
        + "# Long\n\nThirty steps of agent work, then one review.\n"
    )


def measure(client, path: str, samples: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries = [], 0
    for _ in range(samples):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(path)
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, (path, response.status_code)
        queries = len(captured)
    return statistics.fmean(times) * 1000, percentile(times, 0.95) * 1000, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    setup_django(recreate_database("bench_inbox"))

    from django.test import Client

    from accounts.identity import Identity
    from accounts.models import Agent, Group, Membership, Organization, User
    from processes.publishing import import_process
    from runs.tools import call_tool

    org = Organization.objects.get(slug="default")
    Group.objects.create(organization=org, name="reviewers")
    review = APPROVAL.replace("bench-approval", "bench-review")
    for text, group in ((APPROVAL, "approvers"), (long_process(30), "approvers"), (review, "reviewers")):
        outcome = import_process(organization=org, text=text, bindings={"approvers": group}, publish=True)
        assert outcome.status == "published", outcome.lines()
    user = User.objects.create_user("approver@example.com", "bench-password")
    Membership.objects.create(user=user, organization=org)
    Group.objects.get(organization=org, name="approvers").members.add(user)
    # A second person, with only the reviews, which go to a group of their own.
    reviewer = User.objects.create_user("reviewer@example.com", "bench-password")
    Membership.objects.create(user=reviewer, organization=org)
    Group.objects.get(organization=org, name="reviewers").members.add(reviewer)
    agent = Identity.for_agent(Agent.objects.create(organization=org, name="inbox-bench"))

    def write(tool, **arguments):
        return call_tool(agent, tool, {**arguments, "requestId": str(uuid.uuid4())})

    for index in range(args.items):
        write("start_run", process="bench-approval", inputs={"ticket": f"T{index}"})
    for index in range(10):
        write("start_run", process="bench-review", inputs={"ticket": f"R{index}"})
    run = write("start_run", process="bench-long", inputs={})
    run_id = run["run"]["id"]
    for step in range(30):
        token = write("claim", runId=run_id, stepId=f"s{step}")["token"]
        view = write("submit", token=token, output={"n": step}, summary=f"Step {step} done.")
    item_id = view["workItems"][0]["id"]

    client = Client()
    assert client.login(email="approver@example.com", password="bench-password")
    for label, path in (
        (f"inbox with {args.items + 1} open items", "/inbox/"),
        ("item page, run with 30 completed steps", f"/inbox/{item_id}/"),
        ("run page, 30 completed steps", f"/runs/{run_id}/"),
    ):
        mean, p95, queries = measure(client, path, args.samples)
        print(f"{label}: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")
    client = Client()
    assert client.login(email="reviewer@example.com", password="bench-password")
    mean, p95, queries = measure(client, "/inbox/", args.samples)
    print(f"inbox with 10 open items among the organization's {args.items + 11}: "
          f"{mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")


if __name__ == "__main__":
    main()
