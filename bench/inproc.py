"""The cost of a tool call against the floor's, in one process, by CPU time: steady on a noisy machine.

    python bench/inproc.py [--iterations 300] [--profile five-step] [--orm]

Drives the same scenarios as bench/agents.py (one-step, five-step, floor) through Django's WSGI
handler in this process, without sockets or gunicorn, against PostgreSQL (BENCH_DATABASE_URL).
The scenarios take turns every few runs, so a drift in the machine's speed falls on each alike.
For each it prints, per tool, this process's CPU microseconds per call and the database backend's,
then the ratio of a tool call's CPU cost to the floor request's. What it leaves out (HTTP parsing in
gunicorn, the socket) costs the floor and a tool call alike, so its ratio is an upper bound on the
ratio over HTTP at the same code. Each tool's round trips to PostgreSQL are counted afterwards, over
`--count` more runs of each scenario, on the wire (libpq's protocol trace, as
tests/runs/test_round_trips.py counts them, but for the whole request).

`--orm` measures the same scenarios twice over, taking turns: once through base.sql, the plain-SQL
layer of the write path, and once with that layer's reads and writes done by the plain Django ORM
(bench/orm_store.py), and prints the two side by side.

`--ledger RUNS` runs each scenario RUNS more times with the server's stages timed (bench/ledger.py)
and prints where a tool call's app CPU goes, stage by stage, beside the floor's.

`--profile SCENARIO` runs that scenario under cProfile after the measurement (with `--orm`, through
the ORM) and prints the functions with the most time of their own and with the most time under them;
`--profile-out FILE` also writes the whole profile to FILE (`python -m pstats FILE`).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import database_settings, recreate_database, setup_django, tree_cpu_seconds
from bench.orm_store import LEFT_TO_THE_LAYER, plain_orm

WRITES = {"start_run", "claim", "renew", "upload", "submit", "escalate", "send_event", "decide", "cancel"}


def request(handler, path: str, payload: bytes, content_type: str, authorization: str) -> tuple[str, bytes]:
    """One POST through the WSGI application, as gunicorn would hand it over."""
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(len(payload)),
        "HTTP_AUTHORIZATION": authorization, "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.input": io.BytesIO(payload), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    status = []
    chunks = handler(environ, lambda line, headers, exc_info=None: status.append(line))
    body = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return status[0], body


def access_token(handler, client_id: str, secret: str) -> str:
    """A bearer token by the client-credentials grant, from the server's own token endpoint."""
    import base64

    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    _status, body = request(handler, "/identity/o/api/token", b"grant_type=client_credentials&scope=agentprocess",
                           "application/x-www-form-urlencoded", f"Basic {basic}")
    return json.loads(body)["access_token"]


class RoundTrips:
    """The round trips of what runs inside, counted in libpq's trace of the connection: BEGIN and COMMIT
    count, a batch of statements sent as one query counts once."""

    def __enter__(self):
        from django.db import connection
        from psycopg import pq

        connection.ensure_connection()
        self.file = tempfile.TemporaryFile()
        self.pgconn = connection.connection.pgconn
        self.pgconn.trace(self.file.fileno())
        self.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return self

    def __exit__(self, *exc):
        self.pgconn.untrace()
        self.file.seek(0)
        lines = self.file.read().decode(errors="replace").splitlines()
        self.file.close()
        self.count = sum(1 for line in lines if line.startswith("B\t") and "\tReadyForQuery\t" in line)


class Caller:
    """Calls the WSGI application directly, counting this process's CPU (and, when asked, round trips)
    per mode and label."""

    def __init__(self, handler, token: str, backend_pid: int):
        self.handler = handler
        self.token = token
        self.backend_pid = backend_pid
        self.mode = "layer"
        self.cpu: dict[tuple[str, str], list[float]] = {}  # (mode, label): [app seconds, calls]
        self.calls = 0
        self.counting = False
        self.trips: Counter = Counter()  # (mode, label): round trips
        self.traced: Counter = Counter()  # (mode, label): calls whose round trips were counted
        self.started: dict[str, list[str]] = {}  # mode: the runs started in it
        self.ledger = None  # a bench.ledger.Ledger the requests are counted in, while one is installed

    def post(self, path: str, body: dict, label: str) -> dict:
        payload = json.dumps(body).encode()
        if self.counting:
            with RoundTrips() as wire:
                status, body_bytes = request(self.handler, path, payload, "application/json", f"Bearer {self.token}")
            self.trips[self.mode, label] += wire.count
            self.traced[self.mode, label] += 1
        elif self.ledger is not None:
            with self.ledger.request("floor" if label == "floor" else "tool call"):
                status, body_bytes = request(self.handler, path, payload, "application/json", f"Bearer {self.token}")
        else:
            started = time.process_time()
            status, body_bytes = request(self.handler, path, payload, "application/json", f"Bearer {self.token}")
            spent = time.process_time() - started
            entry = self.cpu.setdefault((self.mode, label), [0.0, 0])
            entry[0] += spent
            entry[1] += 1
            self.calls += 1
        answer = json.loads(body_bytes)
        if not answer.get("ok"):
            raise RuntimeError(f"{self.mode} {label} → {status[0]} {answer.get('error')}")
        return answer.get("data", {})

    def tool(self, tool: str, **arguments) -> dict:
        if tool in WRITES:
            arguments.setdefault("requestId", str(uuid.uuid4()))
        data = self.post(f"/api/tools/{tool}", arguments, tool)
        if tool == "start_run":
            self.started.setdefault(self.mode, []).append(data["run"]["id"])
        return data


def one_step(caller: Caller) -> None:
    run_id = caller.tool("start_run", process="bench-one", inputs={"ticket": "T"})["run"]["id"]
    caller.tool("get_work", process="bench-one", limit=5)
    claimed = caller.tool("claim", runId=run_id, stepId="work")
    view = caller.tool("submit", token=claimed["token"], output={"result": "ok"}, summary="Done.")
    assert view["run"]["state"] == "ended"


def five_step(caller: Caller) -> None:
    run_id = caller.tool("start_run", process="bench-five", inputs={"ticket": "T"})["run"]["id"]
    caller.tool("get_work", process="bench-five", limit=5)
    token = caller.tool("claim", runId=run_id, stepId="intake")["token"]
    enrich = random.random() < 0.5
    caller.tool("submit", token=token, output={"priority": "high"}, summary="Read it.",
                next="enrich" if enrich else "settle", reason="Chosen by the benchmark.")
    if enrich:
        token = caller.tool("claim", runId=run_id, stepId="enrich")["token"]
        caller.tool("submit", token=token, output={"notes": "n"}, summary="Enriched.")
    assert caller.tool("send_event", runId=run_id, name="paid", data={"ref": "P"})["consumedBy"] == "settle"
    token = caller.tool("claim", runId=run_id, stepId="record")["token"]
    view = caller.tool("submit", token=token, output={"ref": "R"}, summary="Recorded.")
    assert view["run"]["outcome"] == "recorded"


def floor(caller: Caller) -> None:
    # As many floor requests as a five-step run makes calls, so each turn is about as long.
    for _ in range(8):
        caller.post("/bench/floor", {"row": random.randint(1, 64)}, "floor")


SCENARIOS = {"one-step": one_step, "five-step": five_step, "floor": floor}


def backend_seconds(pid: int) -> float:
    return tree_cpu_seconds([pid])


# How each mode's reads and writes are done: through base.sql, or with its functions swapped for the ORM.
MODES = {"layer": contextlib.nullcontext, "orm": plain_orm}
MODE_NAMES = {"layer": "base.sql", "orm": "plain ORM"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="runs of each scenario (floor: 8 requests each)")
    parser.add_argument("--turn", type=int, default=5, help="runs of one scenario before the next takes its turn")
    parser.add_argument("--warmup", type=int, default=30, help="runs of each scenario before measuring")
    parser.add_argument("--orm", action="store_true", help="measure the plain ORM beside base.sql, taking turns")
    parser.add_argument("--count", type=int, default=10, help="runs of each scenario whose round trips are counted")
    parser.add_argument("--ledger", type=int, default=0, metavar="RUNS",
                        help="run each scenario RUNS more times and print its app CPU stage by stage")
    parser.add_argument("--profile", choices=sorted(SCENARIOS), help="profile this scenario afterwards")
    parser.add_argument("--profile-out", metavar="FILE", help="also write the profile to FILE, for pstats or snakeviz")
    parser.add_argument("--database", default="bench_inproc", help="the database to create (dropped first)")
    args = parser.parse_args()

    os.environ["ROOT_URLCONF"] = "bench.urls"
    # One database backend for the whole measurement, whose CPU is read by its pid: a connection closed
    # at its age's end would hand the measurement to a new backend the readings do not follow.
    os.environ["DATABASE_CONN_MAX_AGE"] = str(7 * 24 * 3600)
    url = recreate_database(args.database)
    setup_django(url)
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    from bench.agents import prepare

    credentials = prepare(1)
    handler = WSGIHandler()
    connection.ensure_connection()
    backend_pid = connection.connection.info.backend_pid
    caller = Caller(handler, access_token(handler, *credentials[0]), backend_pid)
    modes = ["layer", "orm"] if args.orm else ["layer"]

    for mode in modes:
        caller.mode = mode
        with MODES[mode]():
            for scenario in SCENARIOS.values():
                for _ in range(args.warmup):
                    scenario(caller)
    caller.cpu.clear()
    app = {(mode, name): 0.0 for mode in modes for name in SCENARIOS}
    database = dict.fromkeys(app, 0.0)
    calls = dict.fromkeys(app, 0)
    done = 0
    while done < args.iterations:
        turn = min(args.turn, args.iterations - done)
        # Each mode goes first in every other turn, so neither always follows the other.
        for mode in modes if (done // args.turn) % 2 == 0 else modes[::-1]:
            caller.mode = mode
            with MODES[mode]():
                for name, scenario in SCENARIOS.items():
                    calls_before = caller.calls
                    db_before, app_before = backend_seconds(backend_pid), time.process_time()
                    for _ in range(turn):
                        scenario(caller)
                    app[mode, name] += time.process_time() - app_before
                    database[mode, name] += backend_seconds(backend_pid) - db_before
                    calls[mode, name] += caller.calls - calls_before
        done += turn
    if connection.connection is None or connection.connection.info.backend_pid != backend_pid:
        raise SystemExit("the database connection was replaced during the measurement: its CPU is not all counted")

    caller.counting = True
    for mode in modes:
        caller.mode = mode
        with MODES[mode]():
            for scenario in SCENARIOS.values():
                for _ in range(args.count):
                    scenario(caller)
    caller.counting = False

    print(f"{args.iterations} runs of each scenario in turns of {args.turn}"
          + (", base.sql and the plain ORM taking turns" if args.orm else "")
          + ", through the WSGI handler in one process; the database backend's CPU is read from /proc in 10 ms ticks")
    print(database_settings() + "\n")
    report(caller, modes, app, database, calls)
    check_runs(caller, modes)

    if args.ledger:
        print_ledger(caller, modes, args.ledger)

    if args.profile:
        profiled = modes[-1]
        caller.mode = profiled
        profiler = cProfile.Profile(time.process_time)
        with MODES[profiled]():
            profiler.enable()
            for _ in range(args.iterations):
                SCENARIOS[args.profile](caller)
            profiler.disable()
        if args.profile_out:
            profiler.dump_stats(args.profile_out)
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(30)
            print(f"\n--- {args.profile} ({profiled}), by {order} ---")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:8000])


def print_ledger(caller: Caller, modes: list[str], runs: int) -> None:
    """Each scenario `runs` more times with the server's stages timed, in each mode; where the CPU went."""
    from bench.ledger import Ledger

    for mode in modes:
        caller.mode = mode
        with MODES[mode](), Ledger().installed() as ledger:
            caller.ledger = ledger
            try:
                for scenario in SCENARIOS.values():
                    for _ in range(runs):
                        scenario(caller)
            finally:
                caller.ledger = None
        print(f"\n--- where the app CPU goes ({MODE_NAMES[mode]}, {runs} runs of each scenario) ---")
        ledger.report()


def report(caller: Caller, modes: list[str], app: dict, database: dict, calls: dict) -> None:
    """Per tool, per scenario and against the floor, each mode's figures side by side."""
    names = MODE_NAMES

    def row(values, digits=0):
        return "".join(f"{value:>11.{digits}f}" for value in values)

    def table(first: str, groups: list[str]) -> None:
        width = 11 * len(modes)
        print(f"  {first:<19}" + "".join(f"  {title:>{width}}" for title in groups))
        print(f"  {'':<19}" + "".join("  " + "".join(f"{names[mode]:>11}" for mode in modes) for _ in groups))

    def trips(mode, label):
        counted = caller.traced[mode, label]
        return caller.trips[mode, label] / counted if counted else float("nan")

    table("tool (calls)", ["app CPU µs per call", "round trips per call"])
    for label in sorted({label for _mode, label in caller.cpu}):
        seconds = [caller.cpu[mode, label][0] / caller.cpu[mode, label][1] * 1e6 for mode in modes]
        print(f"  {label:<11}{caller.cpu[modes[0], label][1]:>8}  {row(seconds)}  "
              f"{row([trips(mode, label) for mode in modes], digits=1)}")
    print()
    table("scenario (calls)", ["app CPU µs per call", "database µs per call"])
    for name in SCENARIOS:
        print(f"  {name:<11}{calls[modes[0], name]:>8}  "
              f"{row([app[mode, name] / calls[mode, name] * 1e6 for mode in modes])}  "
              f"{row([database[mode, name] / calls[mode, name] * 1e6 for mode in modes])}")
    print()
    table("× the floor", ["by app CPU", "by app and database"])
    for name in ("one-step", "five-step"):
        by_app, by_all = [], []
        for mode in modes:
            floor_n, n = calls[mode, "floor"], calls[mode, name]
            by_app.append(app[mode, name] / n / (app[mode, "floor"] / floor_n))
            by_all.append((app[mode, name] + database[mode, name]) / n
                          / ((app[mode, "floor"] + database[mode, "floor"]) / floor_n))
        print(f"  {name:<19}  {row(by_app, digits=2)}  {row(by_all, digits=2)}")
    print("\n(round trips were counted on the wire over further runs; they include the check Django makes "
          "of a kept connection at each request's first query, CONN_HEALTH_CHECKS)")
    if len(modes) < 2:
        return
    print()
    tool_cpu, write_trips = {}, {}
    for mode in modes:
        spent = sum(app[mode, name] for name in ("one-step", "five-step"))
        tool_cpu[mode] = spent / sum(calls[mode, name] for name in ("one-step", "five-step")) * 1e6
        counted = [(caller.trips[key], n) for key, n in caller.traced.items() if key[0] == mode and key[1] in WRITES]
        write_trips[mode] = sum(t for t, _n in counted) / sum(n for _t, n in counted)
    print(f"base.sql vs the plain ORM: {tool_cpu['layer']:.0f} µs vs {tool_cpu['orm']:.0f} µs app CPU per tool call, "
          f"{write_trips['layer']:.1f} vs {write_trips['orm']:.1f} round trips per write")
    if LEFT_TO_THE_LAYER:
        print("reads the plain ORM left to base.sql (a form bench/orm_store.py does not know):")
        for (model, where, suffix), n in LEFT_TO_THE_LAYER.most_common():
            print(f"  {n:>7}  {model} WHERE {where} {suffix}")


def check_runs(caller: Caller, modes: list[str]) -> None:
    """Every run each mode started has ended: the ORM's writes did what base.sql's do."""
    from runs.models import Run, RunState, public_pk

    for mode in modes:
        keys = [public_pk(run_id, "r") for run_id in caller.started.get(mode, [])]
        ended = Run.objects.filter(pk__in=keys, state=RunState.ENDED).count()
        print(f"{mode}: {len(keys)} runs started, {ended} ended")
        if ended != len(keys):
            raise SystemExit(f"{mode}: {len(keys) - ended} runs did not end")


if __name__ == "__main__":
    main()
