"""The cost of a tool call against the floor's, in one process, by CPU time: steady on a noisy machine.

    python bench/inproc.py [--iterations 300] [--profile five-step]

Drives the same scenarios as bench/agents.py (one-step, five-step, floor) through Django's WSGI
handler in this process, without sockets or gunicorn, against PostgreSQL (BENCH_DATABASE_URL).
The scenarios take turns every few runs, so a drift in the machine's speed falls on each alike.
For each it prints, per tool, this process's CPU microseconds per call and the database backend's,
then the ratio of a tool call's CPU cost to the floor request's. What it leaves out (HTTP parsing in
gunicorn, the socket) costs the floor and a tool call alike, so its ratio is an upper bound on the
ratio over HTTP at the same code.

`--profile SCENARIO` runs that scenario under cProfile after the measurement and prints the
functions with the most time of their own and with the most time under them.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import database_settings, recreate_database, setup_django, tree_cpu_seconds

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


class Caller:
    """Calls the WSGI application directly, counting this process's and the backend's CPU per label."""

    def __init__(self, handler, token: str, backend_pid: int):
        self.handler = handler
        self.token = token
        self.backend_pid = backend_pid
        self.cpu: dict[str, list[float]] = {}  # label: [app seconds, calls]
        self.calls = 0

    def post(self, path: str, body: dict, label: str) -> dict:
        started = time.process_time()
        status, body_bytes = request(self.handler, path, json.dumps(body).encode(), "application/json",
                                     f"Bearer {self.token}")
        spent = time.process_time() - started
        entry = self.cpu.setdefault(label, [0.0, 0])
        entry[0] += spent
        entry[1] += 1
        self.calls += 1
        answer = json.loads(body_bytes)
        if not answer.get("ok"):
            raise RuntimeError(f"{label} → {status[0]} {answer.get('error')}")
        return answer.get("data", {})

    def tool(self, tool: str, **arguments) -> dict:
        if tool in WRITES:
            arguments.setdefault("requestId", str(uuid.uuid4()))
        return self.post(f"/api/tools/{tool}", arguments, tool)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="runs of each scenario (floor: 8 requests each)")
    parser.add_argument("--turn", type=int, default=5, help="runs of one scenario before the next takes its turn")
    parser.add_argument("--warmup", type=int, default=30, help="runs of each scenario before measuring")
    parser.add_argument("--profile", choices=sorted(SCENARIOS), help="profile this scenario afterwards")
    args = parser.parse_args()

    os.environ["ROOT_URLCONF"] = "bench.urls"
    url = recreate_database("bench_inproc")
    setup_django(url)
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    from bench.agents import prepare

    credentials = prepare(1)
    handler = WSGIHandler()
    connection.ensure_connection()
    backend_pid = connection.connection.info.backend_pid
    caller = Caller(handler, access_token(handler, *credentials[0]), backend_pid)

    for scenario in SCENARIOS.values():
        for _ in range(args.warmup):
            scenario(caller)
    caller.cpu.clear()
    app = dict.fromkeys(SCENARIOS, 0.0)
    database = dict.fromkeys(SCENARIOS, 0.0)
    calls = dict.fromkeys(SCENARIOS, 0)
    done = 0
    while done < args.iterations:
        turn = min(args.turn, args.iterations - done)
        for name, scenario in SCENARIOS.items():
            calls_before = caller.calls
            db_before, app_before = backend_seconds(backend_pid), time.process_time()
            for _ in range(turn):
                scenario(caller)
            app[name] += time.process_time() - app_before
            database[name] += backend_seconds(backend_pid) - db_before
            calls[name] += caller.calls - calls_before
        done += turn

    print(f"{args.iterations} runs of each scenario in turns of {args.turn}, through the WSGI handler in one "
          "process; the database backend's CPU is read from /proc in 10 ms ticks")
    print(database_settings() + "\n")
    for label, (seconds, n) in sorted(caller.cpu.items()):
        print(f"  {label:<12} {n:>7} calls {seconds / n * 1e6:>8.0f} µs app CPU per call")
    print()
    for name in SCENARIOS:
        n = calls[name]
        print(f"{name}: {n} calls, app CPU {app[name] / n * 1e6:.0f} µs per call, "
              f"database backend {database[name] / n * 1e6:.0f} µs per call")
    print()
    floor_app = app["floor"] / calls["floor"]
    floor_all = (app["floor"] + database["floor"]) / calls["floor"]
    for name in ("one-step", "five-step"):
        n = calls[name]
        print(f"{name}: a tool call costs {app[name] / n / floor_app:.2f}x the floor by app CPU, "
              f"{(app[name] + database[name]) / n / floor_all:.2f}x by app and database CPU together")

    if args.profile:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(args.iterations):
            SCENARIOS[args.profile](caller)
        profiler.disable()
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(30)
            print(f"\n--- {args.profile}, by {order} ---")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:8000])


if __name__ == "__main__":
    main()
