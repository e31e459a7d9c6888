"""Faults across a real network: app nodes, PostgreSQL, Redis and timers on hosts of their own.

    sudo .venv/bin/python -m tests.faults.network run --minutes 30 --seed 2026
    sudo .venv/bin/python -m tests.faults.network cleanup      # what a killed run left behind

`run` builds network namespaces joined by veth pairs (tests/faults/netns.py) and starts on them a
client host, two app nodes (gunicorn with config/gunicorn.py, DEBUG=0), a database host with a
PostgreSQL of its own, a Redis host, and a timers host with a Celery worker and beat
(tests/faults/cluster.py). Agents and people in the client host drive runs through both nodes over
HTTP (tests/faults/workload.py) while a seeded nemesis injects overlapping faults:

- partition: a node's link to the database side drops every packet, then heals;
- slow link: every packet on a link, both ways, 200 ms late and 5% lost (tc netem, or where the kernel
  lacks netem an iptables `statistic` rule for the loss and a netfilter queue held 200 ms for the delay);
- kill node: SIGKILL a node's gunicorn (master and workers), restarted a few seconds later;
- postgres restart: PostgreSQL stopped (fast or immediate) and started again;
- redis cut: Redis's link drops every packet;
- lost answers: the client throws away answers it read (the server committed), so it retries.

Every call is retried with its requestId on no answer or `retry`, as tools.md tells clients. When the
time is up the faults heal, the workload drains, and tests/faults/checker.py checks the history
against every run's final `get_run`. Figures and violations are printed; the exit status is 1 when
the checker found a violation. SIGINT or SIGTERM stops a run and removes everything it made. Needs
root, iproute2, PostgreSQL 15 binaries, redis-server, and iptables where the kernel has no netem.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from tests.faults import checker, netns
from tests.faults.checker import Op
from tests.faults.cluster import FLOWS, NODES, Cluster, missing
from tests.faults.workload import Caller, Conditions, History, Workload

FAULTS = ("partition", "slow link", "kill node", "postgres restart", "redis cut", "lost answers")

# --- the nemesis --------------------------------------------------------------------------------


class Nemesis:
    """Seeded faults, overlapping: each runs in its own thread from start to heal."""

    def __init__(self, cluster: Cluster, conditions: Conditions, seed: int, scale: float = 1.0):
        self.cluster, self.conditions = cluster, conditions
        self.rng = random.Random(seed)
        self.scale = scale
        self.injected: Counter = Counter()
        self.log: list[str] = []
        self.threads: list[threading.Thread] = []
        self.busy: set = set()
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.how: dict[str, str] = {}
        self.most_at_once = 0

    def run(self, until: float) -> None:
        """Start faults until `until` (monotonic); every kind once first, in a seeded order."""
        order = list(FAULTS)
        self.rng.shuffle(order)
        while time.monotonic() < until:
            kind = order.pop(0) if order else self.rng.choice(FAULTS)
            duration = self.rng.uniform(4, 15) * self.scale
            if not self._launch(kind, duration) and not self.injected[kind]:
                order.append(kind)  # its target was busy: every kind still comes at least once
            time.sleep(self.rng.uniform(2, 8) * self.scale)
        self.heal()

    def heal(self) -> None:
        for thread in self.threads:
            thread.join(180)
        self.cluster.net.heal_all()
        self.conditions.drop_rate = 0.0

    def _launch(self, kind: str, duration: float) -> bool:
        target = {"partition": self.rng.choice(NODES), "kill node": self.rng.choice(NODES),
                  "slow link": self.rng.choice([(node, side) for node in NODES for side in ("front", "back")]),
                  }.get(kind, kind)
        key = (kind, target) if kind != "slow link" else ("link", target)
        with self.lock:
            if key in self.busy or (kind == "partition" and ("link", (target, "back")) in self.busy) or \
                    (kind == "slow link" and target[1] == "back" and ("partition", target[0]) in self.busy):
                return False
            self.busy.add(key)
            self.most_at_once = max(self.most_at_once, len(self.busy))
        self.injected[kind] += 1
        self.log.append(f"{time.strftime('%H:%M:%S')} {kind} {target} {duration:.0f}s")
        thread = threading.Thread(target=self._fault, args=(kind, target, duration, key), daemon=True)
        self.threads.append(thread)
        thread.start()
        return True

    def _fault(self, kind: str, target, duration: float, key) -> None:
        net = self.cluster.net
        try:
            if kind == "partition":
                self.how[kind] = net.cut(target, "back")
                time.sleep(duration)
                net.heal(target, "back")
            elif kind == "slow link":
                self.how[kind] = net.slow(target[0], target[1])
                time.sleep(duration)
                net.heal(target[0], target[1])
            elif kind == "redis cut":
                self.how[kind] = net.cut("redis", "back")
                time.sleep(duration)
                net.heal("redis", "back")
            elif kind == "lost answers":
                self.conditions.drop_rate = 0.3
                time.sleep(duration)
                self.conditions.drop_rate = 0.0
            elif kind == "kill node":
                self.cluster.procs[target].stop(signal.SIGKILL)
                time.sleep(min(duration, 5))
                self.cluster.procs[target].start()
                self.cluster.wait_node(target)
            elif kind == "postgres restart":
                self.cluster.restart_postgres(self.rng.choice((signal.SIGINT, signal.SIGQUIT)))
        except Exception as exc:  # a fault that could not be applied or healed is a harness failure
            self.failures.append(f"{kind} {target}: {type(exc).__name__}: {exc}")
        finally:
            with self.lock:
                self.busy.discard(key)


# --- one run ------------------------------------------------------------------------------------


def final_state(cluster: Cluster, workload: Workload) -> dict:
    """Every run's get_run view, read through a node once everything healed."""
    result: dict = {}

    def read():
        netns.enter(cluster.net.ns("client"))
        token = workload.token(*cluster.credentials["agents"][-1])
        reader = Caller("reader", cluster.net, History(), Conditions(), random.Random(0),
                        {"Authorization": f"Bearer {token}"}, timeout=30)
        ids, cursor = set(workload.runs), None
        while True:
            listed = reader.call("list_runs", {"limit": 100, **({"cursor": cursor} if cursor else {})}, budget=60)
            ids.update(item["id"] for item in listed.data["items"])
            cursor = listed.data.get("nextCursor")
            if not cursor:
                break
        for run_id in sorted(ids):
            op = reader.call("get_run", {"runId": run_id}, budget=60)
            result[run_id] = op.data

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return result


def all_settled(views: dict) -> bool:
    for view in views.values():
        flow = FLOWS.get(view["run"]["process"])
        live = [s["id"] for s in view["steps"] if s.get("state") in ("ready", "claimed", "waiting")]
        if not view["run"].get("ended") and not (flow and live and all(s in flow.never for s in live)):
            return False
    return True


def run(minutes: float, seed: int, *, drain_seconds: float = 240, scale: float = 1.0, out: Path | None = None,
        agents: int = 6, tag: str | None = None) -> dict:
    """Build, load, break, heal, drain and check; return the figures (and `violations`, a list of strings)."""
    problems = missing()
    if problems:
        raise RuntimeError("; ".join(problems))
    workdir = Path(tempfile.mkdtemp(prefix="apnf-"))
    os.environ["AGENTS"] = str(agents + 1)  # one more for reading the final state
    cluster = Cluster(workdir, tag)
    history, conditions = History(), Conditions()
    figures: dict = {}
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def interrupted(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        for sig in previous:
            signal.signal(sig, interrupted)
    began = time.monotonic()
    try:
        print(f"namespaces {cluster.net.prefix}-*, work in {workdir}", flush=True)
        cluster.start()
        print("hosts up: " + ", ".join(f"{host} {cluster.net.ns(host)}" for host in cluster.net.hosts), flush=True)
        cluster.credentials["agents"], reader = cluster.credentials["agents"][:-1], cluster.credentials["agents"][-1]
        workload = Workload(cluster, history, conditions, seed)
        workload.start()
        nemesis = Nemesis(cluster, conditions, seed, scale)
        nemesis.run(time.monotonic() + minutes * 60)
        heal_at = time.time()
        workload.draining.set()
        cluster.credentials["agents"].append(reader)
        deadline = time.monotonic() + drain_seconds
        final = {}
        while time.monotonic() < deadline and not workload.errors:
            time.sleep(5)
            final = final_state(cluster, workload)
            if all_settled(final):
                break
        settled_after = time.time() - heal_at
        workload.finish()
        final = final_state(cluster, workload)
        report = check(history.ops, final, heal_at)
        violations = [str(v) for v in report.violations] + [f"workload: {e}" for e in workload.errors] + \
            [f"nemesis: {f}" for f in nemesis.failures] + \
            [f"server error: {op.tool} via {op.node} answered {op.status} {json.dumps(op.body)[:200]}"
             for op in history.ops if op.outcome == "server error"]
        outcomes = Counter(op.outcome for op in history.ops)
        by_node = {node: Counter() for node in NODES}
        for op in history.ops:
            if op.outcome in ("ok", "error") and op.node in by_node:
                by_node[op.node]["people" if op.actor.startswith("person") else "agents"] += 1
        per_request = Counter(op.args.get("requestId") for op in history.ops if op.args.get("requestId"))
        figures = {
            "namespaces": cluster.net.prefix,
            "seed": seed,
            "minutes of faults": minutes,
            "requests attempted": len(history.ops),
            "answered": outcomes["ok"] + outcomes["error"],
            "answered ok": outcomes["ok"],
            "answered with an error": outcomes["error"],
            "answered retry": outcomes["retry"],
            "no answer": outcomes["lost"],
            "answers dropped": outcomes["dropped"],
            "server errors (5xx other than retry)": outcomes["server error"],
            "retried (attempts after the first, same requestId)": sum(c - 1 for c in per_request.values()),
            "runs": len(final),
            "runs ended": sum(1 for v in final.values() if v["run"].get("ended")),
            "answered by node": {node: dict(counts) for node, counts in by_node.items()},
            "faults injected": dict(nemesis.injected),
            "most faults at once": nemesis.most_at_once,
            "link faults made with": "; ".join(f"{k}: {v}" for k, v in sorted(nemesis.how.items())),
            **({"slow links without netem: packets delayed / lost": "{delayed} / {lost}".format(**cluster.net.slowed)}
               if any(cluster.net.slowed.values()) else {}),
            "violations": len(violations),
            "settled after heal (s)": round(settled_after, 1),
            "bound on settling (s)": drain_seconds,
            **report.figures,
            "wall time (s)": round(time.monotonic() - began, 1),
        }
        figures["violation list"] = violations
        figures["fault log"] = nemesis.log
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "history.jsonl").write_text("".join(op.to_json() + "\n" for op in history.ops))
            (out / "final.json").write_text(json.dumps(final))
            (out / "figures.json").write_text(json.dumps({**figures, "heal at": heal_at}, default=str))
            for log in cluster.logs.iterdir():
                shutil.copy(log, out / log.name)
        return figures
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the removal short
        try:
            cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        finally:
            if threading.current_thread() is threading.main_thread():
                for sig, handler in previous.items():
                    signal.signal(sig, handler)


def check(ops: list[Op], final: dict, heal_at: float | None) -> checker.Report:
    """Check each process's runs against its flow; one report."""
    report = checker.Report()
    for process, flow in FLOWS.items():
        views = {run_id: view for run_id, view in final.items() if view["run"]["process"] == process}
        run_ids = set(views)
        part = checker.check([op for op in ops if _belongs(op, run_ids, ops)], views, flow, heal_at=heal_at)
        report.violations += part.violations
        for key, value in part.figures.items():
            if key.startswith("heal"):
                report.figures[key] = max(report.figures.get(key, 0), value)
            else:
                report.figures[key] = report.figures.get(key, 0) + value
    return report


_TOKEN_RUNS: dict = {}


def _belongs(op: Op, run_ids: set, ops: list[Op]) -> bool:
    """Whether an op concerns one of `run_ids` (a token's run is found from the claim that gave it)."""
    if not _TOKEN_RUNS or _TOKEN_RUNS.get("_for") is not ops:
        _TOKEN_RUNS.clear()
        _TOKEN_RUNS["_for"] = ops
        for o in sorted(ops, key=lambda o: o.start):
            if o.answered_ok and o.tool == "claim":
                _TOKEN_RUNS[o.data["token"]] = o.args["runId"]
            elif o.answered_ok and o.tool == "renew" and o.args["token"] in _TOKEN_RUNS:
                _TOKEN_RUNS[o.data["token"]] = _TOKEN_RUNS[o.args["token"]]
    if op.tool == "start_run":
        return (op.answered_ok and op.data["run"]["id"] in run_ids) or not op.answered_ok
    if "runId" in op.args:
        return op.args["runId"] in run_ids
    if "token" in op.args:
        return _TOKEN_RUNS.get(op.args["token"]) in run_ids
    return op.tool in ("upload", "get_work")  # get_work answers show escalations and returns of every run


def print_figures(figures: dict) -> None:
    print("\nnetwork faults: figures")
    for key, value in figures.items():
        if key in ("violation list", "fault log"):
            continue
        print(f"  {key}: {value}")
    for line in figures.get("violation list", [])[:50]:
        print(f"  VIOLATION {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.network", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="build the hosts, run the workload under faults, check, print figures")
    go.add_argument("--minutes", type=float, default=30, help="how long the faults go on (default 30)")
    go.add_argument("--seed", type=int, default=2026)
    go.add_argument("--drain", type=float, default=240, help="seconds the runs get to settle after the heal")
    go.add_argument("--agents", type=int, default=6)
    go.add_argument("--out", type=Path, help="keep the history, final state and logs here")
    clean = sub.add_parser("cleanup", help="remove namespaces and processes a killed run left behind")
    clean.add_argument("--prefix", default=netns.PREFIX,
                       help=f"only namespaces named with this prefix (default {netns.PREFIX}: every run's)")
    args = parser.parse_args(argv)
    if args.command == "cleanup":
        removed = netns.remove(args.prefix)
        print(f"removed {len(removed)} namespaces: {' '.join(removed) or '-'}")
        return 0
    tag = uuid.uuid4().hex[:6]
    try:
        figures = run(args.minutes, args.seed, drain_seconds=args.drain, out=args.out, agents=args.agents, tag=tag)
    except KeyboardInterrupt:
        print(f"interrupted: removed {netns.PREFIX}{tag}-* and everything running in them", flush=True)
        return 130
    print_figures(figures)
    return 1 if figures["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
