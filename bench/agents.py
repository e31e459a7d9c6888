"""N concurrent agents drive processes end to end over real HTTP against gunicorn and PostgreSQL.

    python bench/agents.py [--agents 32] [--seconds 20] [--rounds 4]

Prints runs per second, tool calls per second and p50/p95/p99 latency per tool for a one-agent-step
process and a five-step process with a route list and an event, then the floor (a bare endpoint
that authenticates the same token and locks and updates one row) and the ratio of a tool call's
mean cost to the floor's, by latency, by throughput and by app-server CPU. The scenarios take turns
in rounds, so a drift in the machine's speed falls on each alike. Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432).
The load generator runs on the same machine as the server, so it takes some of the same cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    Agent,
    Server,
    ToolFailed,
    client_credentials_token,
    database_settings,
    latency_table,
    postgres_roots,
    recreate_database,
    setup_django,
    tree_cpu_seconds,
)

ONE_STEP = """---
name: bench-one
description: One agent step, then done.
inputs:
  ticket: string
steps:
  - id: work
    agent: Do the work.
    output:
      result: string
  - id: done
    finish: completed
---
One step.
"""

FIVE_STEPS = """---
name: bench-five
description: Intake with a route list, enrichment, an event, a record, done.
inputs:
  ticket: string
steps:
  - id: intake
    agent: Read the ticket and choose a route.
    output:
      priority: { type: string, one_of: [low, high] }
    next:
      - { to: enrich, when: Needs enrichment }
      - { to: settle, when: Already complete }
  - id: enrich
    agent: Enrich the ticket.
    output:
      notes: string
    next: settle
  - id: settle
    wait_for: paid
    next: record
  - id: record
    agent: Record the outcome.
    output:
      ref: string
  - id: done
    finish: recorded
---
Five steps.
"""


def prepare(agents: int):
    from accounts.models import Organization
    from accounts.oauth import create_agent
    from bench.floor import ensure_table
    from processes.publishing import import_process

    org = Organization.objects.get(slug="default")
    for text in (ONE_STEP, FIVE_STEPS):
        outcome = import_process(organization=org, text=text, publish=True)
        assert outcome.status == "published", outcome.lines()
    ensure_table()
    return [create_agent(organization=org, name=f"bench-{i}")[1:] for i in range(agents)]


def one_step_loop(agent: Agent, stop: float, counts: dict) -> None:
    while time.monotonic() < stop:
        run_id = agent.tool("start_run", process="bench-one", inputs={"ticket": "T"})["run"]["id"]
        agent.tool("get_work", process="bench-one", limit=5)
        claimed = agent.tool("claim", runId=run_id, stepId="work")
        view = agent.tool("submit", token=claimed["token"], output={"result": "ok"}, summary="Done.")
        assert view["run"]["state"] == "ended"
        counts["runs"] += 1


def five_step_loop(agent: Agent, stop: float, counts: dict) -> None:
    while time.monotonic() < stop:
        run_id = agent.tool("start_run", process="bench-five", inputs={"ticket": "T"})["run"]["id"]
        agent.tool("get_work", process="bench-five", limit=5)
        token = agent.tool("claim", runId=run_id, stepId="intake")["token"]
        enrich = random.random() < 0.5
        agent.tool("submit", token=token, output={"priority": "high"}, summary="Read it.",
                   next="enrich" if enrich else "settle", reason="Chosen by the benchmark.")
        if enrich:
            token = agent.tool("claim", runId=run_id, stepId="enrich")["token"]
            agent.tool("submit", token=token, output={"notes": "n"}, summary="Enriched.")
        assert agent.tool("send_event", runId=run_id, name="paid", data={"ref": "P"})["consumedBy"] == "settle"
        token = agent.tool("claim", runId=run_id, stepId="record")["token"]
        view = agent.tool("submit", token=token, output={"ref": "R"}, summary="Recorded.")
        assert view["run"]["outcome"] == "recorded"
        counts["runs"] += 1


def floor_loop(agent: Agent, stop: float, counts: dict) -> None:
    while time.monotonic() < stop:
        status, _ = agent.post("/bench/floor", {"row": random.randint(1, 64)}, "floor")
        assert status == 200
        counts["runs"] += 1


LOOPS = {"one-step": one_step_loop, "five-step": five_step_loop, "floor": floor_loop}


def drive_threads(port: int, tokens: list[str], scenario: str, stop: float) -> tuple[dict, dict]:
    """Run one thread per token until `stop` (a time.monotonic() deadline shared by every process)."""
    import resource

    latencies: dict[str, list[float]] = {}
    lock = threading.Lock()
    before = resource.getrusage(resource.RUSAGE_SELF)
    counts = {"runs": 0, "errors": 0}

    def worker(token: str):
        own: dict[str, list[float]] = {}
        mine = {"runs": 0}
        agent = Agent(port, token, own)
        try:
            LOOPS[scenario](agent, stop, mine)
        except (ToolFailed, AssertionError) as failure:
            print(f"  agent stopped: {failure}", file=sys.stderr)
            mine["errors"] = 1
        with lock:
            for tool, values in own.items():
                latencies.setdefault(tool, []).extend(values)
            counts["runs"] += mine["runs"]
            counts["errors"] += mine.get("errors", 0)

    threads = [threading.Thread(target=worker, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = resource.getrusage(resource.RUSAGE_SELF)
    counts["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return latencies, counts


def drive(server: Server, tokens: list[str], scenario: str, seconds: float, processes: int):
    """Drive every agent for `seconds`, spread over `processes` client processes (the GIL limits one)."""
    from concurrent.futures import ProcessPoolExecutor

    started = time.monotonic()
    stop = started + seconds
    shares = [tokens[i::processes] for i in range(processes)]
    latencies: dict[str, list[float]] = {}
    counts = {"runs": 0, "errors": 0, "cpu": 0.0}
    cpu_before = {"server": tree_cpu_seconds([server.process.pid]), "database": tree_cpu_seconds(postgres_roots())}
    with ProcessPoolExecutor(processes) as pool:
        futures = [pool.submit(drive_threads, server.port, share, scenario, stop) for share in shares if share]
        for future in futures:
            part, part_counts = future.result()
            for tool, values in part.items():
                latencies.setdefault(tool, []).extend(values)
            counts["runs"] += part_counts["runs"]
            counts["errors"] += part_counts["errors"]
            counts["cpu"] += part_counts["cpu"]
    cpu = {
        "server": tree_cpu_seconds([server.process.pid]) - cpu_before["server"],
        "database": tree_cpu_seconds(postgres_roots()) - cpu_before["database"],
        "load generator": counts["cpu"],
    }
    return latencies, counts, time.monotonic() - started, cpu


SCENARIOS = ("one-step", "five-step", "floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20, help="seconds per scenario, over all rounds")
    parser.add_argument("--rounds", type=int, default=4,
                        help="the scenarios take turns this many times, so a machine whose speed drifts "
                             "(shared cores, a noisy neighbour) slows each of them alike")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: one per core)")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per gthread worker (0: sync workers)")
    parser.add_argument("--processes", type=int, default=2, help="client processes the agents are spread over")
    args = parser.parse_args()

    url = recreate_database("bench_agents")
    setup_django(url)
    credentials = prepare(args.agents)
    server = Server(url, workers=args.workers, threads=args.threads)
    try:
        tokens = [client_credentials_token(server.base, cid, secret) for cid, secret in credentials]
        print(f"{args.agents} agents in {args.processes} client processes, {args.seconds:.0f} s per scenario "
              f"in {args.rounds} round(s), gunicorn workers: {args.workers or 'one per core'}, "
              f"{f'gthread with {args.threads} thread(s) each' if args.threads else 'sync'}")
        print(database_settings() + "\n")
        results = {name: {"latencies": {}, "runs": 0, "errors": 0, "elapsed": 0.0, "cpu": {}} for name in SCENARIOS}
        per_round = []  # each round's {scenario: (mean latency, server CPU per call)}
        for _ in range(args.rounds):
            this_round = {}
            per_round.append(this_round)
            for name in SCENARIOS:
                latencies, counts, elapsed, cpu = drive(server, tokens, name, args.seconds / args.rounds, args.processes)
                values = [v for tool_values in latencies.values() for v in tool_values]
                if values:
                    this_round[name] = (statistics.fmean(values), cpu["server"] / len(values))
                total = results[name]
                for tool, values in latencies.items():
                    total["latencies"].setdefault(tool, []).extend(values)
                total["runs"] += counts["runs"]
                total["errors"] += counts["errors"]
                total["elapsed"] += elapsed
                for who, seconds in cpu.items():
                    total["cpu"][who] = total["cpu"].get(who, 0.0) + seconds
        for name, total in results.items():
            latencies, elapsed = total["latencies"], total["elapsed"]
            calls = sum(len(v) for v in latencies.values())
            label = "requests" if name == "floor" else "runs"
            print(f"{name}: {total['runs'] / elapsed:.1f} {label}/s, {calls / elapsed:.1f} calls/s"
                  + (f", {total['errors']} agents stopped on an error" if total["errors"] else ""))
            for line in latency_table(latencies, elapsed):
                print(line)
            print("  CPU per call: " + ", ".join(f"{who} {seconds / calls * 1000:.2f} ms" for who, seconds in total["cpu"].items())
                  + f" (machine busy {sum(total['cpu'].values()) / elapsed / (os.cpu_count() or 1):.0%})")
            print()

        def per_call(name):
            latencies = results[name]["latencies"]
            calls = sum(len(v) for v in latencies.values())
            mean = statistics.fmean([v for values in latencies.values() for v in values])
            return mean, calls / results[name]["elapsed"], results[name]["cpu"]["server"] / calls

        floor_mean, floor_rate, floor_cpu = per_call("floor")
        for name in ("one-step", "five-step"):
            mean, rate, server_cpu = per_call(name)
            print(f"{name}: a tool call costs {mean / floor_mean:.2f}x the floor by mean latency "
                  f"({mean * 1000:.1f} ms vs {floor_mean * 1000:.1f} ms), "
                  f"{floor_rate / rate:.2f}x by throughput, "
                  f"{server_cpu / floor_cpu:.2f}x by app-server CPU")
        if args.rounds > 1:
            # How far the rounds disagree: on shared cores the machine's speed drifts between them.
            for name in ("one-step", "five-step"):
                pairs = [(r[name], r["floor"]) for r in per_round if name in r and "floor" in r]
                print(f"{name}, round by round: by mean latency "
                      + " ".join(f"{tool[0] / floor[0]:.2f}" for tool, floor in pairs)
                      + "; by app-server CPU " + " ".join(f"{tool[1] / floor[1]:.2f}" for tool, floor in pairs))
        if any(total["errors"] for total in results.values()):
            print("\nThe server's log ends:\n" + server.log_tail())
    finally:
        server.stop()


if __name__ == "__main__":
    main()
