"""The inbox page for a person with 1,000 open items and for one with 10 among them, with each of its
filters and orders; the item page of a run with 30 completed steps; the search over 100,000 runs, by
words too; and the runs list over them in each order.

    python bench/inbox.py [--items 1000] [--runs 100000] [--samples 20]

Renders the pages in-process (Django's test client, signed in) against PostgreSQL and prints the
time and SQL query count of each. The search is timed twice: the search itself (work.search, the
queries a search box costs) and the whole /search/ page.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import measure, page, recreate_database, setup_django

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")  # notices, unsent
    setup_django(recreate_database("bench_inbox"))

    from django.db import connection
    from django.test import Client

    from accounts.identity import Identity
    from accounts.models import Agent, Group, Membership, Organization, User
    from processes.publishing import import_process
    from runs.models import Run, WorkItem
    from runs.tools import call_tool
    from work import search

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
    item = WorkItem.objects.filter(run__process_name="bench-approval").order_by("pk").first()
    assert client.post(f"/inbox/{item.public_id}/take/").status_code == 302
    for label, path in (
        (f"inbox with {args.items + 1} open items", "/inbox/"),
        ("  filtered: my groups'", "/inbox/?show=groups"),
        ("  filtered: taken by me (1)", "/inbox/?show=taken"),
        ("  filtered: nobody on it", "/inbox/?show=unassigned"),
        ("  filtered: one process", "/inbox/?process=bench-approval"),
        ("  sorted by due date", "/inbox/?sort=due"),
        ("  sorted by process", "/inbox/?sort=process"),
        ("item page, run with 30 completed steps", f"/inbox/{item_id}/"),
        ("run page, 30 completed steps", f"/runs/{run_id}/"),
    ):
        mean, _, p95, queries = measure(page(client, path), args.samples)
        print(f"{label}: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")
    client = Client()
    assert client.login(email="reviewer@example.com", password="bench-password")
    mean, _, p95, queries = measure(page(client, "/inbox/"), args.samples)
    print(f"inbox with 10 open items among the organization's {args.items + 11}: "
          f"{mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")

    grow_claims(org, args.runs)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    person = Identity.for_user(reviewer)
    wanted = f"CLM-{args.runs // 2:07d}"
    total = Run.objects.filter(organization=org).count()
    for label, text in ((f"a run by an input value among {total:,} runs", wanted),
                        ("a run by one word of an input", "Okafor"),
                        ("a run by the start of a word of an input", "okaf"),
                        ("runs by a word of the process title, in every run", "review"),
                        ("runs by two words, one rare", "zanele review"),
                        ("a run by a nested input value", f"RC-{args.runs // 3}"),
                        ("runs by part of the process name", "review"),
                        ("runs by who started them", "inbox-bench"),
                        ("a run by its id", f"r_{Run.objects.order_by('pk').values_list('pk', flat=True)[total // 2]}")):
        found = search.search(person, text)
        assert found.runs, (label, text)
        mean, _, p95, queries = measure(lambda text=text: search.search(person, text), args.samples)
        print(f"search, {label}: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries, {len(found.runs)} found")
    mean, _, p95, queries = measure(page(client, f"/search/?q={wanted}"), args.samples)
    print(f"search page for an input value: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")
    from runs.search import runs_with_words

    for label, words in (("one rare word", ["okafor"]), ("the start of a rare word", ["okaf"]),
                         ("a word in every run", ["review"]), ("a word in no run", ["nowhere"])):
        mean, _, p95, queries = measure(lambda words=words: runs_with_words(org.pk, words, limit=25), args.samples)
        print(f"words look-up alone, {label}: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")
    mean, _, p95, queries = measure(page(client, "/search/?q=okaf"), args.samples)
    print(f"search page for the start of a word: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")
    client = Client()
    assert client.login(email="approver@example.com", password="bench-password")
    for sort in ("started", "updated", "due"):
        mean, _, p95, queries = measure(page(client, f"/runs/?sort={sort}"), args.samples)
        print(f"runs list of {total:,} runs by {sort}: {mean:.1f} ms mean, {p95:.1f} ms p95, {queries} queries")


FIRST_NAMES = ("Amara", "Ben", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas")
LAST_NAMES = ("Adeyemi", "Baker", "Costa", "Dube", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jansen")


def grow_claims(organization, count: int) -> None:
    """Add `count` ended runs in bulk, each with a claim id, a customer's name and a nested receipt number among
    its inputs, and each its search document; one customer in the middle is Zanele Okafor."""
    import datetime as dt

    from django.utils import timezone

    from processes.models import ProcessVersion
    from runs.models import Run, RunSearch
    from runs.search import document_row

    version = ProcessVersion.objects.get(process__organization=organization, process__name="bench-review")
    now = timezone.now()

    def customer(i: int) -> str:
        if i == count // 2:
            return "Zanele Okafor"
        return f"{FIRST_NAMES[i % 10]} {LAST_NAMES[i // 10 % 10]}"

    for start in range(0, count, 5000):
        runs = Run.objects.bulk_create(
            Run(organization=organization, version=version, process_name="bench-review", started_by="a_0",
                state="ended", outcome="ok", started_at=now - dt.timedelta(seconds=count - i),
                updated_at=now - dt.timedelta(seconds=count - i),
                data={"inputs": {"claim_id": f"CLM-{i:07d}", "customer": customer(i), "amount": i % 500,
                                 "receipt": {"number": f"RC-{i}"}}, "steps": {}})
            for i in range(start, min(start + 5000, count))
        )
        RunSearch.objects.bulk_create(document_row(run) for run in runs)


if __name__ == "__main__":
    main()
