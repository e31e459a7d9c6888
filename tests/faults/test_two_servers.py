"""Two app servers against one database, hammered at once on the same runs (issue 7 §2).

Two gunicorn masters (two workers each) on two ports share one PostgreSQL database. On the same
runs, at the same moment and through both servers:

- copies of one start_run (one requestId) start one run and all answer the same;
- every agent claims every run's step, each claim sent through both servers with its requestId:
  exactly one agent wins each step, and both copies of the winning claim return the same token;
- the winner submits twice over, two requestIds, each sent three times across both servers, while
  another agent tries the winner's token: exactly one submission completes the step, every copy
  of it answers alike, and nothing else is written.

The five guarantees are checked in the database afterwards: one claim per step, no lost or double
completion (each run ended, its step done once with an empty history), and the published versions
untouched (their rows and their content hash as before).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.agents import ONE_STEP
from processes.hashing import content_hash
from tests.faults import harness
from tests.faults.harness import CallLog, Client, Server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

AGENTS = 10
RUNS = 24
START_COPIES = 4
SUBMIT_COPIES = 3


def versions(url: str) -> list:
    return harness.sql(url, "SELECT row_to_json(v)::text FROM processes_processversion v ORDER BY id")


def persisted(client: Client, tool: str, arguments: dict):
    """Send one call until it has a definitive answer (a lock timeout answers `retry`: same requestId again)."""
    return harness.call_until_answered(client, tool, dict(arguments), attempts=30, budget=60, max_delay=0.5).final


def test_two_servers_racing_on_the_same_runs_keep_the_guarantees(logs):
    began = time.monotonic()
    url = harness.fault_database("fault_two_servers")
    info = harness.setup_database(url, {"processes": [{"text": ONE_STEP}], "agents": AGENTS})
    before = versions(url)
    log = CallLog()
    servers = [Server(url, logs, "two-a", workers=2), Server(url, logs, "two-b", workers=2)]
    try:
        ports = [s.port for s in servers]
        tokens = harness.bearer_tokens(servers[0], info["agents"])

        def client(agent: int, side: int) -> Client:
            return Client(ports[side], tokens[agent], log, agent=agent)

        # --- start_run: copies of one requestId through both servers at once ----------------------
        starts = []
        for n in range(RUNS):
            arguments = {"process": "bench-one", "inputs": {"ticket": f"T-{n}"}, "requestId": str(uuid.uuid4())}
            starts += [(n % AGENTS, copy % 2, arguments) for copy in range(START_COPIES)]
        with ThreadPoolExecutor(32) as pool:
            started = list(pool.map(lambda job: (job, persisted(client(job[0], job[1]), "start_run", job[2])), starts))
        by_request = defaultdict(list)
        for (_agent, _side, arguments), call in started:
            assert call.ok, call.describe()
            by_request[arguments["requestId"]].append(call.data)
        assert all(all(d == answers[0] for d in answers) for answers in by_request.values()), \
            "copies of one start_run answered differently"
        run_ids = [answers[0]["run"]["id"] for answers in by_request.values()]
        assert len(set(run_ids)) == RUNS
        assert harness.sql(url, "SELECT count(*) FROM runs_run")[0][0] == RUNS, "a start_run copy started a second run"

        # --- claim: every agent, every run, through both servers ---------------------------------
        claim_ids = {(agent, run): str(uuid.uuid4()) for agent in range(AGENTS) for run in run_ids}
        barrier = threading.Barrier(AGENTS * 2)
        claims: list = []

        def claimer(agent: int, side: int) -> None:
            mine = client(agent, side)
            barrier.wait(30)
            order = run_ids if (agent + side) % 2 == 0 else list(reversed(run_ids))
            for run in order:
                arguments = {"runId": run, "stepId": "work", "requestId": claim_ids[(agent, run)]}
                claims.append((agent, run, persisted(mine, "claim", arguments)))

        threads = [threading.Thread(target=claimer, args=(a, s)) for a in range(AGENTS) for s in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        assert len(claims) == AGENTS * 2 * RUNS
        winners: dict[str, set] = defaultdict(set)
        tokens_by_run: dict[str, set] = defaultdict(set)
        for agent, run, call in claims:
            if call.ok:
                winners[run].add(agent)
                tokens_by_run[run].add(call.data["token"])
            else:
                assert call.status == 409 and call.code == "conflict", call.describe()
                assert call.body["error"]["issues"] in (["claimed_by_other"], ["claimed_by_you"]), call.describe()
        assert all(len(winners[run]) == 1 for run in run_ids), {r: w for r, w in winners.items() if len(w) != 1}
        assert all(len(tokens_by_run[run]) == 1 for run in run_ids), "a replayed claim gave another token"
        winner = {run: next(iter(winners[run])) for run in run_ids}
        token = {run: next(iter(tokens_by_run[run])) for run in run_ids}
        wins = Counter(winner.values())

        # --- submit: two requestIds, copies through both servers, and a stranger with the token -----
        submits = []
        for run in run_ids:
            for label in ("first", "second"):
                arguments = {"token": token[run], "output": {"result": label}, "summary": f"The {label}.",
                             "requestId": str(uuid.uuid4())}
                submits += [(run, label, winner[run], copy % 2, arguments) for copy in range(SUBMIT_COPIES)]
            stranger = (winner[run] + 1) % AGENTS
            submits.append((run, "stranger", stranger, 1, {"token": token[run], "output": {"result": "mine"},
                                                           "summary": "Not mine.", "requestId": str(uuid.uuid4())}))
        submit_barrier = threading.Barrier(len(submits))

        def submitter(job):
            _run, _label, agent, side, arguments = job
            mine = client(agent, side)
            submit_barrier.wait(60)
            return job, persisted(mine, "submit", arguments)

        with ThreadPoolExecutor(len(submits)) as pool:
            submitted = list(pool.map(submitter, submits))
        completions: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for (run, label, _agent, _side, _arguments), call in submitted:
            if label == "stranger":
                assert not call.ok and call.code in ("forbidden", "stale", "conflict"), call.describe()
                continue
            if call.ok:
                completions[run][label].append(call.data)
            else:
                assert call.status == 409 and call.code in ("stale", "conflict"), call.describe()
        for run in run_ids:
            assert len(completions[run]) == 1, f"{run}: submissions completed {dict(completions[run])}"
            [(label, answers)] = completions[run].items()
            assert len(answers) == SUBMIT_COPIES, f"{run}: only {len(answers)} copies of the winning submit were ok"
            assert all(a == answers[0] for a in answers), f"{run}: copies of one submit answered differently"
            assert answers[0]["run"]["state"] == "ended"
            assert answers[0]["data"]["steps"]["work"]["output"] == {"result": label}
        first_wins = sum(1 for run in run_ids if "first" in completions[run])

        # --- every acknowledged write, replayed through the other server, answers the same --------
        acked = [c for c in log if c.ok and c.tool in harness.WRITE_TOOLS]

        def replay(call):
            return call, Client(ports[1 - ports.index(call.port)], tokens[call.agent]).call(call.tool,
                                                                                            dict(call.arguments))

        with ThreadPoolExecutor(16) as pool:
            replays = list(pool.map(replay, acked))
        differ = [(c, a) for c, a in replays if not a.ok or a.data != c.data]
        assert not differ, f"{len(differ)} replays differ: {differ[0][0].describe()} then {differ[0][1].describe()}"

        calls = list(log)
        assert not [c for c in calls if c.is_server_error or c.failure], "a 5xx or a dropped connection"
        tracebacks = [t for s in servers for t in s.tracebacks()]
        assert not tracebacks, tracebacks[0]
    finally:
        for server in servers:
            server.stop()

    # --- the guarantees, in the database ---------------------------------------------------------
    leases = harness.sql(url, "SELECT run_id, count(*), min(holder) FROM runs_lease GROUP BY run_id")
    assert sorted(n for _, n, _ in leases) == [1] * RUNS, "a step was claimed more than once"
    holder = {pk: who for pk, _, who in leases}
    rows = harness.sql(url, "SELECT r.id, r.state, r.outcome, s.state, s.attempt, r.data->'steps'->'work' "
                            "FROM runs_run r JOIN runs_runstep s ON s.run_id = r.id AND s.step_id = 'work' ORDER BY r.id")
    assert len(rows) == RUNS
    for pk, run_state, outcome, step_state, attempt, work in rows:
        assert (run_state, outcome, step_state, attempt) == ("ended", "completed", "done", 1), (pk, run_state, step_state)
        assert work["history"] == [] and work["by"] == holder[pk], (work, holder[pk])
        [(label, answers)] = completions[f"r_{pk}"].items()
        assert work["output"] == {"result": label} == answers[0]["data"]["steps"]["work"]["output"]
    records = Counter(tool for (tool,) in harness.sql(url, "SELECT tool FROM runs_idempotencyrecord"))
    assert records == {"start_run": RUNS, "claim": RUNS, "submit": RUNS}, records
    after = versions(url)
    assert after == before, "a published version changed"
    for (text,) in after:
        version = json.loads(text)
        assert content_hash(version["frontmatter"], version["body"]) == version["sha256"]

    harness.report(
        "two servers",
        calls=len(calls),
        start_copies=len(starts),
        claims=len(claims),
        claims_won=sum(wins.values()),
        winning_agents=len(wins),
        submits=len(submits),
        first_submission_won=first_wins,
        replays=len(replays),
        retry_503=sum(1 for c in calls if c.status == 503),
        seconds=round(time.monotonic() - began, 1),
    )
    harness.drop_database("fault_two_servers")
