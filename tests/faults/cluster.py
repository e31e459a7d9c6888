"""The hosts of the network fault harness and what runs on them (tests/faults/network.py).

A client host, two app nodes (gunicorn with config/gunicorn.py, DEBUG=0), a database host with a
PostgreSQL of its own (initdb into a temporary directory), a Redis host, and a timers host with a
Celery worker and beat, each in a network namespace (tests/faults/netns.py). The processes the
workload drives (FLOW_TEXT, PARK_TEXT) and what the checker needs to know of them (FLOWS) are here too.

    python -m tests.faults.cluster setup    # (internal) on an app host: migrate, publish, create callers
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.faults import netns
from tests.faults.checker import Flow

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
        done = subprocess.run(self.net.exec_argv("app1", [PYTHON, "-m", "tests.faults.cluster", "setup"]),
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
        """Stop every service, then remove the namespaces and whatever still runs in them."""
        self.net.closed = True  # a fault thread still going starts nothing from here on
        for name in ("beat", "worker", *NODES, "redis", "postgres"):
            if name in self.procs:
                with contextlib.suppress(Exception):
                    self.procs[name].stop(signal.SIGINT if name == "postgres" else signal.SIGTERM)
        self.net.destroy()


def setup_main() -> None:
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


if __name__ == "__main__":
    if sys.argv[1:] != ["setup"]:
        sys.exit("usage: python -m tests.faults.cluster setup   (run by Cluster on an app host)")
    setup_main()
