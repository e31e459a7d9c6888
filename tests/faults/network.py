"""Faults across a real network: app nodes, PostgreSQL, Redis and timers on hosts of their own.

    sudo .venv/bin/python -m tests.faults.network run --minutes 30 --seed 2026
    sudo .venv/bin/python -m tests.faults.network cleanup      # what a killed run left behind

`run` builds network namespaces (tests/faults/netns.py): a client host, two app nodes (gunicorn with
config/gunicorn.py, DEBUG=0), a database host with a PostgreSQL of its own (initdb into a temporary
directory), a Redis host, and a timers host with a Celery worker and beat. Agents and people in the
client host drive runs through both nodes over HTTP while a seeded nemesis cuts, slows and kills:

- partition: a node's link to the database side drops every packet (tc netem loss 100%), then heals;
- slow link: delay 200ms and loss 5% on a link;
- kill node: SIGKILL a node's gunicorn (master and workers), restarted a few seconds later;
- postgres restart: PostgreSQL stopped (fast or immediate) and started again;
- redis cut: Redis's link drops every packet;
- lost answers: the client throws away answers it read (the server committed), so it retries.

Every call is retried with its requestId on no answer or `retry`, as tools.md tells clients. When the
time is up the faults heal, the workload drains, and tests/faults/checker.py checks the history
against every run's final `get_run`. Figures and violations are printed; the exit status is 1 when
the checker found a violation. Needs root, iproute2, PostgreSQL 15 binaries and redis-server.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import random
import secrets
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from tests.faults import checker, netns
from tests.faults.checker import Flow, Op

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SECRET_KEY = "network-faults-secret-key-" + "n" * 40
PG_BINARIES = [Path("/usr/lib/postgresql/15/bin"), Path("/usr/local/bin")]
LEASE_SECONDS = 6
NODES = ("app1", "app2")
HOSTS = [
    netns.Host("client", {"front": 10}),
    netns.Host("app1", {"front": 11, "back": 11}),
    netns.Host("app2", {"front": 12, "back": 12}),
    netns.Host("db", {"back": 2}),
    netns.Host("redis", {"back": 3}),
    netns.Host("timers", {"back": 20}),
]
FAULTS = ("partition", "slow link", "kill node", "postgres restart", "redis cut", "lost answers")

FLOW_TEXT = """---
name: net-flow
description: Gather, wait for a go, build with a file, wait for a second go, a person reviews.
inputs:
  key: string
steps:
  - id: gather
    agent: Gather the facts.
    output:
      n: number
  - id: signal
    wait_for: go
  - id: build
    agent: Build it and attach the file.
    output:
      n: number
    evidence: [file]
  - id: signal2
    wait_for: go
  - id: review
    person: reviewers
    approve: Approve the build.
    on_reject: build
  - id: done
    finish: completed
---
Work that crosses the network.
"""

PARK_TEXT = """---
name: net-park
description: One agent step, then a wait for an event nobody sends.
inputs:
  key: string
steps:
  - id: work
    agent: Do the work.
    output:
      n: number
  - id: hold
    wait_for: never
  - id: done
    finish: completed
---
Parked.
"""

FLOWS = {
    "net-flow": Flow(order=["gather", "signal", "build", "signal2", "review"],
                     follows={"gather": {"signal"}, "signal": {"build"}, "build": {"signal2"}, "signal2": {"review"},
                              "review": set()},
                     first="gather", approval="review", on_reject="build", waits=frozenset({"signal", "signal2"})),
    "net-park": Flow(order=["work", "hold"], follows={"work": {"hold"}, "hold": set()}, first="work",
                     approval="review", on_reject="work", waits=frozenset({"hold"}), never=frozenset({"hold"})),
}


def missing() -> list[str]:
    """What this machine lacks for the harness; each a sentence naming the fix."""
    problems = netns.missing_tools()
    if pg_bin() is None:
        problems.append("PostgreSQL 15 binaries (initdb, postgres) are missing: apt-get install postgresql-15")
    if shutil.which("redis-server") is None:
        problems.append("redis-server is missing: apt-get install redis-server")
    if subprocess.run(["id", "postgres"], capture_output=True).returncode != 0:
        problems.append("there is no `postgres` user to run PostgreSQL as")
    return problems


def pg_bin() -> Path | None:
    for folder in PG_BINARIES:
        if (folder / "initdb").exists() and (folder / "postgres").exists():
            return folder
    return None


# --- services on their hosts --------------------------------------------------------------------


class Proc:
    """A process started on one host (`ip netns exec` execs it), leading its own process group."""

    def __init__(self, net: netns.Network, host: str, argv: list[str], log: Path, env: dict, user: str | None = None):
        self.net, self.host, self.argv, self.log, self.env, self.user = net, host, argv, log, env, user
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = list(self.argv)
        if self.user:
            argv = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", *argv]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(self.net.exec_argv(self.host, argv), cwd=ROOT, env=self.env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def send_signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        if self.process is None:
            return
        self.send_signal(sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.send_signal(signal.SIGKILL)
            self.process.wait(10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # any child left in the group

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Cluster:
    """Everything one run starts: the network, PostgreSQL, Redis, the app nodes and the timers."""

    def __init__(self, workdir: Path, tag: str | None = None, web_concurrency: int = 2):
        self.workdir = workdir
        self.net = netns.Network(HOSTS, tag)
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.db_addr = self.net.address("db", "back")
        self.redis_addr = self.net.address("redis", "back")
        self.database_url = f"postgres://postgres@{self.db_addr}:5432/postgres"
        self.procs: dict[str, Proc] = {}
        self.web_concurrency = web_concurrency

    def env(self, extra: dict | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL")}
        env.update({
            "DATABASE_URL": self.database_url,
            "REDIS_URL": f"redis://{self.redis_addr}:6379/0",
            "SECRET_KEY": SECRET_KEY,
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONWARNINGS": "ignore",
            "PYTHONUNBUFFERED": "1",
            "ALLOWED_HOSTS": ",".join(self.net.address(node, "front") for node in NODES),
            "LEASE_SECONDS": str(LEASE_SECONDS),
            "SWEEP_SECONDS": "2",
            "C_FORCE_ROOT": "1",
        })
        env.update(extra or {})
        return env

    def start(self) -> None:
        self.net.build()
        self._start_postgres()
        self.procs["redis"] = Proc(self.net, "redis", [
            "redis-server", "--port", "6379", "--bind", self.redis_addr, "127.0.0.1", "--save", "", "--appendonly",
            "no", "--dir", str(self.workdir), "--protected-mode", "no"], self.logs / "redis.log", self.env())
        self.procs["redis"].start()
        self._setup()
        for node in NODES:
            metrics = self.workdir / f"metrics-{node}"
            metrics.mkdir(exist_ok=True)
            self.procs[node] = Proc(self.net, node, [PYTHON, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi",
                                     # each node its own control socket, not the shared ~/.gunicorn one
                                     "--control-socket", str(self.workdir / f"{node}.ctl")],
                                    self.logs / f"{node}.log", self.env({
                                        "BIND": "0.0.0.0:8000", "WEB_CONCURRENCY": str(self.web_concurrency),
                                        "PROMETHEUS_MULTIPROC_DIR": str(metrics)}))
            self.procs[node].start()
        celery = [PYTHON, "-m", "celery", "-A", "config"]
        self.procs["worker"] = Proc(self.net, "timers", [
            *celery, "worker", "--pool", "solo", "--loglevel", "warning", "-n", "net-sweeper@%h", "--without-mingle",
            "--without-gossip"], self.logs / "worker.log", self.env())
        self.procs["beat"] = Proc(self.net, "timers", [
            *celery, "beat", "--loglevel", "warning", "-s", str(self.workdir / "beat-schedule")],
            self.logs / "beat.log", self.env())
        self.procs["worker"].start()
        self.procs["beat"].start()
        for node in NODES:
            self.wait_node(node)

    def _start_postgres(self) -> None:
        folder = pg_bin()
        data = self.workdir / "pgdata"
        sockets = self.workdir / "pgsocket"
        for path in (data, sockets):
            path.mkdir()
        shutil.chown(self.workdir, "postgres", "postgres")
        for path in (data, sockets):
            shutil.chown(path, "postgres", "postgres")
        done = subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                               str(folder / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                               "--no-sync"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr[-2000:]}")
        with open(data / "postgresql.conf", "a") as conf:
            # A node cut off mid-transaction leaves a session PostgreSQL cannot reach: these end it, and
            # its locks, within seconds instead of the kernel's quarter of an hour (docs/deploy.md).
            conf.write(
                f"listen_addresses = '{self.db_addr},127.0.0.1'\nport = 5432\nunix_socket_directories = '{sockets}'\n"
                "max_connections = 200\nfsync = off\nfull_page_writes = off\n"
                "tcp_keepalives_idle = 5\ntcp_keepalives_interval = 2\ntcp_keepalives_count = 3\n"
                "tcp_user_timeout = 10000\nidle_in_transaction_session_timeout = 15000\n")
        with open(data / "pg_hba.conf", "w") as hba:
            hba.write("local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all 10.213.0.0/16 trust\n")
        self.procs["postgres"] = Proc(self.net, "db", [str(folder / "postgres"), "-D", str(data)],
                                      self.logs / "postgres.log", self.env(), user="postgres")
        self.procs["postgres"].start()
        self.wait_postgres()

    def wait_postgres(self, timeout: float = 60) -> None:
        folder = pg_bin()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = subprocess.run(self.net.exec_argv("db", [str(folder / "pg_isready"), "-h", "127.0.0.1", "-U", "postgres", "-q"]),
                                  capture_output=True)
            if done.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("PostgreSQL did not start:\n" + (self.logs / "postgres.log").read_text()[-2000:])

    def restart_postgres(self, mode_signal: int) -> None:
        self.procs["postgres"].stop(mode_signal, timeout=60)
        self.procs["postgres"].start()
        self.wait_postgres()

    def _setup(self) -> None:
        done = subprocess.run(self.net.exec_argv("app1", [PYTHON, "-m", "tests.faults.network", "setup"]),
                              cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"setup failed:\n{done.stderr[-4000:]}")
        self.credentials = json.loads(done.stdout.strip().splitlines()[-1])

    def wait_node(self, node: str, timeout: float = 90) -> None:
        result: dict = {}

        def probe():
            netns.enter(self.net.ns("client"))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if not self.procs[node].alive():
                    result["error"] = f"{node} exited:\n" + (self.logs / f"{node}.log").read_text()[-3000:]
                    return
                try:
                    conn = http.client.HTTPConnection(self.net.address(node, "front"), 8000, timeout=5)
                    conn.request("GET", "/healthz")
                    if conn.getresponse().status in (200, 503):
                        return
                except OSError:
                    pass
                time.sleep(0.2)
            result["error"] = f"{node} did not answer /healthz within {timeout}s"

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        if "error" in result:
            raise RuntimeError(result["error"])

    def stop(self) -> None:
        for name in ("beat", "worker", *NODES, "redis", "postgres"):
            if name in self.procs:
                with contextlib.suppress(Exception):
                    self.procs[name].stop(signal.SIGINT if name == "postgres" else signal.SIGTERM)
        self.net.destroy()


def _setup_main() -> None:
    """On an app host: migrate, publish the processes, create agents and people with sessions; print them."""
    sys.path.insert(0, str(ROOT))
    from bench.common import setup_django

    setup_django(os.environ["DATABASE_URL"])
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    PBKDF2PasswordHasher.iterations = 1000  # throwaway secrets; the server checks them with its stock hasher

    from accounts.models import Group, Membership, Organization, User
    from accounts.oauth import create_agent
    from processes.publishing import import_process

    org = Organization.objects.get(slug="default")
    group, _ = Group.objects.get_or_create(organization=org, name="reviewers")
    for text, bindings in ((FLOW_TEXT, {"reviewers": "reviewers"}), (PARK_TEXT, {})):
        outcome = import_process(organization=org, text=text, bindings=bindings, publish=True)
        assert outcome.status == "published", outcome.lines()
    store = import_module(settings.SESSION_ENGINE).SessionStore
    people = []
    for n in range(2):
        user = User.objects.create_user(f"reviewer{n}@example.com", "a-Long-network-passw0rd")
        # Both are operators too: escalations go to the operators (tools.md escalate).
        Membership.objects.create(user=user, organization=org, is_operator=True)
        group.members.add(user)
        session = store()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.set_expiry(24 * 3600)
        session.create()
        people.append({"email": user.email, "session": session.session_key, "cookie": settings.SESSION_COOKIE_NAME})
    agents = [list(create_agent(organization=org, name=f"net-{i}")[1:]) for i in range(int(os.environ.get("AGENTS", 8)))]
    print(json.dumps({"agents": agents, "people": people}))


# --- the client side ----------------------------------------------------------------------------


class History:
    def __init__(self):
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def add(self, **fields) -> Op:
        with self._lock:
            op = Op(id=len(self.ops), **fields)
            self.ops.append(op)
            return op


class Conditions:
    """What the nemesis sets for the client side: how often an answer read is thrown away."""

    def __init__(self):
        self.drop_rate = 0.0


class Caller:
    """One agent or person in the client host: HTTP to either node, every attempt recorded."""

    def __init__(self, name: str, net: netns.Network, history: History, conditions: Conditions, rng: random.Random,
                 headers: dict, timeout: float = 12):
        self.name, self.net, self.history, self.conditions, self.rng = name, net, history, conditions, rng
        self.headers = {"Content-Type": "application/json", **headers}
        self.timeout = timeout
        self.node = rng.choice(NODES)
        self.conns: dict[str, http.client.HTTPConnection] = {}
        self.attempts = 0

    def _send(self, node: str, tool: str, args: dict) -> Op:
        start = time.time()
        status = body = None
        outcome = "lost"
        try:
            conn = self.conns.get(node)
            if conn is None:
                conn = self.conns[node] = http.client.HTTPConnection(self.net.address(node, "front"), 8000,
                                                                     timeout=self.timeout)
            conn.request("POST", f"/api/tools/{tool}", json.dumps(args), self.headers)
            response = conn.getresponse()
            payload = response.read()
            status = response.status
            if response.will_close:
                self._close(node)
            try:
                body = json.loads(payload)
            except ValueError:
                body = {"raw": payload[:500].decode(errors="replace")}
            if isinstance(body, dict) and body.get("ok") is True and status == 200:
                outcome = "ok"
            elif status == 503 and ((body or {}).get("error") or {}).get("code") == "retry":
                outcome = "retry"
            elif status >= 500:
                outcome = "server error"
            else:
                outcome = "error"
            if tool in checker.WRITES and outcome in ("ok", "error") and self.rng.random() < self.conditions.drop_rate:
                outcome = "dropped"
                self._close(node)
        except (OSError, http.client.HTTPException):
            self._close(node)
        self.attempts += 1
        return self.history.add(actor=self.name, node=node, tool=tool, args=args, start=start, end=time.time(),
                                outcome=outcome, status=status, body=body)

    def _close(self, node: str) -> None:
        conn = self.conns.pop(node, None)
        if conn is not None:
            conn.close()

    def call(self, tool: str, args: dict, *, budget: float = 150) -> Op | None:
        """Call until answered (ok or error), the same requestId throughout; None when the budget ran out."""
        if tool in checker.WRITES:
            args.setdefault("requestId", str(uuid.uuid4()))
        deadline = time.monotonic() + budget
        delay = 0.1
        while True:
            op = self._send(self.node, tool, args)
            if op.outcome in ("ok", "error"):
                return op
            if time.monotonic() > deadline:
                return None
            # No answer, or `retry`: the same call again (spec §5), through the other node after no answer.
            if op.outcome != "retry":
                self.node = NODES[(NODES.index(self.node) + 1) % len(NODES)]
            time.sleep(delay * (0.5 + self.rng.random()))
            delay = min(2.0, delay * 2)


class Workload:
    """Agents, people and an event sender, each a thread in the client host."""

    def __init__(self, cluster: Cluster, history: History, conditions: Conditions, seed: int):
        self.cluster, self.history, self.conditions, self.seed = cluster, history, conditions, seed
        self.stop = threading.Event()
        self.draining = threading.Event()
        self.runs: dict[str, str] = {}  # run id -> process
        self.ended: set[str] = set()
        self.rejections: Counter = Counter()
        self.events_sent: Counter = Counter()
        self.seq = iter(range(1, 10**9))
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.tokens: list[str] = []
        self.live_runs = 16

    def caller(self, name: str, headers: dict, salt: int) -> Caller:
        return Caller(name, self.cluster.net, self.history, self.conditions, random.Random(self.seed * 1000 + salt),
                      headers)

    def start(self) -> None:
        creds = self.cluster.credentials
        for n, (client_id, secret) in enumerate(creds["agents"]):
            self._thread(self._agent, n, client_id, secret, agent_index=n)
        for n, person in enumerate(creds["people"]):
            self._thread(self._person, n, person)
        self._thread(self._events, 0, *creds["agents"][0])

    def _thread(self, target, *args, **kwargs) -> None:
        def body():
            netns.enter(self.cluster.net.ns("client"))
            try:
                target(*args)
            except Exception as exc:  # a workload thread's crash is reported, never swallowed
                import traceback

                self.errors.append(f"{target.__name__}{args[:1]}: {traceback.format_exc()[-2000:]}")
                raise exc from None

        thread = threading.Thread(target=body, daemon=True, name=f"{target.__name__}-{args[0]}")
        self.threads.append(thread)
        thread.start()

    def _token(self, client_id: str, secret: str) -> str:
        deadline = time.monotonic() + 300
        while True:
            for node in NODES:
                try:
                    return _client_credentials(self.cluster.net.address(node, "front"), client_id, secret)
                except (OSError, http.client.HTTPException, ValueError, KeyError):
                    if time.monotonic() > deadline:
                        raise
            time.sleep(1)

    # --- agents -------------------------------------------------------------------------------

    def _agent(self, n: int, client_id: str, secret: str) -> None:
        token = self._token(client_id, secret)
        me = self.caller(f"agent{n}", {"Authorization": f"Bearer {token}"}, n)
        rng = me.rng
        stale: list[tuple[float, str, str]] = []  # (when to try, token, step) of leases left to expire
        while not self.stop.is_set():
            with self.lock:
                live = len(self.runs) - len(self.ended)
            if not self.draining.is_set() and live < self.live_runs and rng.random() < 0.3:
                self._start(me, "net-park" if rng.random() < 0.08 else "net-flow")
            for due, old, step in [s for s in stale if s[0] < time.time()]:
                stale.remove((due, old, step))
                me.call("submit", {"token": old, "output": {"n": 0}, "summary": f"late:{uuid.uuid4()}"} |
                        ({"evidence": []} if step == "build" else {}))
            work = me.call("get_work", {"limit": 20}, budget=20)
            items = work.data.get("items", []) if work and work.answered_ok else []
            if not items:
                time.sleep(0.2 + rng.random() * 0.3)
                continue
            item = rng.choice(items)
            claim = me.call("claim", {"runId": item["runId"], "stepId": item["stepId"]})
            if claim is None or not claim.answered_ok:
                continue
            self._work(me, claim, stale)

    def _start(self, me: Caller, process: str) -> None:
        op = me.call("start_run", {"process": process, "inputs": {"key": str(uuid.uuid4())}})
        if op is not None and op.answered_ok:
            with self.lock:
                self.runs[op.data["run"]["id"]] = process

    def _work(self, me: Caller, claim: Op, stale: list) -> None:
        rng = me.rng
        token, step = claim.data["token"], claim.args["stepId"]
        choice = rng.random()
        if choice < 0.08:
            # Leave the lease to expire; later, show that its token no longer works.
            stale.append((checker.when(claim.data["expiresAt"]) + 1.5, token, step))
            return
        for _ in range(rng.choice((0, 0, 1, 2))):
            time.sleep(rng.random() * 0.5)
            renewed = me.call("renew", {"token": token, "progress": f"p{rng.randrange(100)}"})
            if renewed is None or not renewed.answered_ok:
                return  # the lease ended (stale): someone else may hold the step now
            token = renewed.data["token"]
        if step == "build" and choice < 0.2:
            me.call("escalate", {"token": token, "note": f"stuck:{uuid.uuid4()}"})
            return
        args: dict = {"token": token, "output": {"n": rng.randrange(1000)}, "summary": f"s:{uuid.uuid4()}"}
        if step == "build":
            upload = me.call("upload", {"fileName": "build.txt", "contentType": "text/plain",
                                        "contentBase64": base64.b64encode(os.urandom(64)).decode()})
            if upload is None or not upload.answered_ok:
                return
            args["evidence"] = [{"kind": "file", "ref": upload.data["id"]}]
        if rng.random() < 0.1:
            me.call("submit", {**args, "output": {"n": "not a number"}, "summary": f"bad:{uuid.uuid4()}"})
        me.call("submit", args)

    def _events(self, n: int, client_id: str, secret: str) -> None:
        """An agent identity that sends each live run the events its waits need, some before they are ready."""
        token = self._token(client_id, secret)
        me = self.caller("events", {"Authorization": f"Bearer {token}"}, 200 + n)
        while not self.stop.is_set():
            self._send_events(me)
            time.sleep(0.2)

    def _send_events(self, me: Caller) -> None:
        with self.lock:
            live = [run for run, process in self.runs.items() if run not in self.ended]
        for run_id in live:
            if self.stop.is_set():
                return
            view = me.call("get_run", {"runId": run_id}, budget=20)
            if view is None or not view.answered_ok:
                continue
            if view.data["run"].get("ended") or self.runs[run_id] != "net-flow":
                if view.data["run"].get("ended") or any(s["id"] == "hold" and s.get("state") == "waiting"
                                                        for s in view.data["steps"]):
                    with self.lock:
                        self.ended.add(run_id)  # ended, or parked for good
                continue
            consumed = sum(1 for _a, _p, step, _r in checker.completions(view.data) if step in ("signal", "signal2"))
            waiting = any(s["id"] in ("signal", "signal2") and s.get("state") == "waiting" for s in view.data["steps"])
            outstanding = self.events_sent[run_id] - consumed
            if (waiting and outstanding < 1) or (outstanding < 2 and me.rng.random() < 0.15):
                self.events_sent[run_id] += 1
                me.call("send_event", {"runId": run_id, "name": "go", "data": {"seq": next(self.seq)}})

    # --- people -------------------------------------------------------------------------------

    def _person(self, n: int, person: dict) -> None:
        csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
        me = self.caller(f"person{n}", {"Cookie": f"{person['cookie']}={person['session']}; csrftoken={csrf}",
                                        "X-CSRFToken": csrf}, 100 + n)
        rng = me.rng
        while not self.stop.is_set():
            work = me.call("get_work", {"limit": 20}, budget=20)
            items = work.data.get("items", []) if work and work.answered_ok else []
            if work is not None and not work.answered_ok and work.status in (401, 403):
                raise RuntimeError(f"{me.name} cannot call as a person: {json.dumps(work.body)[:300]}")
            if not items:
                time.sleep(0.3 + rng.random() * 0.5)
                continue
            for entry in rng.sample(items, min(3, len(items))):
                item = entry["workItem"]
                arguments = dict(item["decide"]["arguments"])
                arguments.pop("requestId", None)
                if item.get("escalation"):
                    arguments.update(decision="returned", note=f"back:{uuid.uuid4()}")
                elif self.rejections[entry["runId"]] < 2 and rng.random() < 0.4:
                    arguments.update(decision="rejected", note=f"no:{uuid.uuid4()}")
                else:
                    arguments.update(decision="approved")
                op = me.call("decide", arguments)
                if op is not None and op.answered_ok:
                    if arguments["decision"] == "rejected":
                        self.rejections[entry["runId"]] += 1
                    if op.data["run"].get("ended"):
                        with self.lock:
                            self.ended.add(entry["runId"])

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(200)


def _client_credentials(address: str, client_id: str, secret: str) -> str:
    conn = http.client.HTTPConnection(address, 8000, timeout=10)
    auth = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    conn.request("GET", "/.well-known/oauth-authorization-server")
    token_path = json.loads(conn.getresponse().read())["token_endpoint"].split(address + ":8000", 1)[-1]
    if token_path.startswith("http"):
        token_path = "/" + token_path.split("/", 3)[3]
    conn.request("POST", token_path, "grant_type=client_credentials&scope=agentprocess",
                 {"Authorization": f"Basic {auth}", "Content-Type": "application/x-www-form-urlencoded"})
    return json.loads(conn.getresponse().read())["access_token"]


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
        token = workload._token(*cluster.credentials["agents"][-1])
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
        agents: int = 6) -> dict:
    """Build, load, break, heal, drain and check; return the figures (and `violations`, a list of strings)."""
    problems = missing()
    if problems:
        raise RuntimeError("; ".join(problems))
    workdir = Path(tempfile.mkdtemp(prefix="apnf-"))
    os.environ["AGENTS"] = str(agents + 1)  # one more for reading the final state
    cluster = Cluster(workdir)
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
        per_request = Counter(op.args.get("requestId") for op in history.ops if op.args.get("requestId"))
        figures = {
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
            "faults injected": dict(nemesis.injected),
            "link faults made with": "; ".join(f"{k}: {v}" for k, v in sorted(nemesis.how.items())),
            "violations": len(violations),
            "settled after heal (s)": round(settled_after, 1),
            **report.figures,
            "wall time (s)": round(time.monotonic() - began, 1),
        }
        figures["violation list"] = violations
        figures["fault log"] = nemesis.log
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "history.jsonl").write_text("".join(op.to_json() + "\n" for op in history.ops))
            (out / "final.json").write_text(json.dumps(final))
            for log in cluster.logs.iterdir():
                shutil.copy(log, out / log.name)
        return figures
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
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
    return op.tool == "upload"


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
    sub.add_parser("setup", help="(internal) prepare the database, on an app host")
    args = parser.parse_args(argv)
    if args.command == "setup":
        _setup_main()
        return 0
    if args.command == "cleanup":
        removed = netns.remove(args.prefix)
        print(f"removed {len(removed)} namespaces: {' '.join(removed) or '-'}")
        return 0
    figures = run(args.minutes, args.seed, drain_seconds=args.drain, out=args.out, agents=args.agents)
    print_figures(figures)
    return 1 if figures["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
