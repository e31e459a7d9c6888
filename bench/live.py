"""What keeping pages current costs: 1,000 people with the inbox open, each polling GET /live/ every
LIVE_POLL_SECONDS (work/live_page.py).

    python bench/live.py [--people 1000] [--interval 4] [--seconds 15] [--clients 16]

Counts in-process the SQL queries of one poll that finds nothing new (a 204) and of the inbox page a
change makes every watching page read again; then serves the polls with gunicorn (one worker per
core, gthread) and asks them as fast as `--clients` keep-alive connections can, each as a different
person, and prints the polls per second a node answers beside the rate 1,000 people make, and the
database queries per minute at that rate. The change stamps are in Redis when REDIS_URL is set, as
on several nodes; without it each worker keeps its own, and the benchmark runs one worker.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Server, measure, page, percentile, recreate_database, setup_django

APPROVAL = """---
name: bench-live
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
"""


def sessions_for(users) -> list[str]:
    """A signed-in session for each person, as the sign-in page would leave in their browser."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    keys = []
    for user in users:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        keys.append(session.session_key)
    return keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=4.0, help="seconds between one page's polls")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
    url = recreate_database("bench_live")
    setup_django(url)

    from django.conf import settings
    from django.contrib.auth.hashers import make_password
    from django.test import Client

    from accounts.identity import Identity
    from accounts.models import Agent, Group, Membership, Organization, User
    from processes.publishing import import_process
    from runs.tools import call_tool

    org = Organization.objects.get(slug="default")
    groups = [Group.objects.create(organization=org, name=f"team-{n}") for n in range(10)]
    outcome = import_process(organization=org, text=APPROVAL, bindings={"approvers": "team-0"}, publish=True)
    assert outcome.status == "published", outcome.lines()
    hashed = make_password("bench-password")  # one hash for all: hashing a thousand takes minutes
    User.objects.bulk_create([User(email=f"p{n}@example.com", password=hashed) for n in range(args.people)])
    users = list(User.objects.filter(email__endswith="@example.com").order_by("pk"))
    Membership.objects.bulk_create([Membership(user=user, organization=org) for user in users])
    for n, user in enumerate(users):
        groups[n % len(groups)].members.add(user)
    agent = Identity.for_agent(Agent.objects.create(organization=org, name="live-bench"))
    for n in range(20):
        call_tool(agent, "start_run", {"process": "bench-live", "inputs": {"ticket": f"T{n}"},
                                       "requestId": str(uuid.uuid4())})

    client = Client()
    assert client.login(email=users[0].email, password="bench-password")
    client.get("/inbox/")
    first = client.get("/live/").json()["stamp"]

    def unchanged():
        assert client.get(f"/live/?since={first}").status_code == 204

    mean, _, p95, poll_queries = measure(unchanged, 50)
    print(f"one poll, nothing new (204), in-process: {mean:.2f} ms mean, {p95:.2f} ms p95, {poll_queries} queries")
    mean, _, p95, inbox_queries = measure(page(client, "/inbox/"), 20)
    print(f"the inbox page a change makes each watching page read again: {mean:.1f} ms mean, {inbox_queries} queries")

    shared = bool(os.environ.get("REDIS_URL"))
    workers = None if shared else 1
    server = Server(url, workers=workers, threads=4, extra_env={"LIVE_POLL_SECONDS": str(int(args.interval))})
    try:
        sessions = sessions_for(users)
        stamps = {}
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        for key in sessions:  # each page's first look: its stamp, and the person's groups remembered
            conn.request("GET", "/live/", headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={key}"})
            response = conn.getresponse()
            stamps[key] = json.loads(response.read())["stamp"]
        conn.close()
        latencies, statuses, lock = [], {}, threading.Lock()
        stop = time.monotonic() + args.seconds

        def poller(offset: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            mine, index = [], offset
            while time.monotonic() < stop:
                key = sessions[index % len(sessions)]
                index += args.clients
                started = time.perf_counter()
                conn.request("GET", f"/live/?since={stamps[key]}",
                             headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={key}"})
                response = conn.getresponse()
                response.read()
                mine.append((time.perf_counter() - started, response.status))
            with lock:
                latencies.extend(t for t, _ in mine)
                for _, status in mine:
                    statuses[status] = statuses.get(status, 0) + 1

        started = time.monotonic()
        threads = [threading.Thread(target=poller, args=(n,)) for n in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    rate = len(latencies) / elapsed
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    needed = args.people / args.interval
    print(f"gunicorn, {'Redis change stamps' if shared else 'one worker, stamps in its memory'}, "
          f"{args.clients} connections: {rate:.0f} polls/s answered ({statuses}), "
          f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms, p95 {percentile(latencies, 0.95) * 1000:.1f} ms")
    print(f"{args.people} people polling every {args.interval:g} s: {needed:.0f} polls/s, "
          f"{needed / rate:.0%} of this node; {needed * 60 * poll_queries:,.0f} database queries a minute "
          f"({poll_queries} a poll: the session and the user), plus {inbox_queries} for each page a change reaches")


if __name__ == "__main__":
    main()
