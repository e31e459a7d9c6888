"""Plumbing for the fault tests: private databases, gunicorn in its own process group, recorded calls.

The pytest process already has Django configured against pytest-django's test database, so
nothing here calls django.setup(). A fault database is prepared in a subprocess:

    python -m tests.faults.harness setup < spec.json     (DATABASE_URL names the fault database)

which migrates it, publishes the processes, creates agents and people, and prints their
credentials as one JSON line. Results are read back over HTTP or with psycopg directly.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# Lease tokens are HMACs under SECRET_KEY: every server and worker of one test must share it.
SECRET_KEY = "fault-tests-secret-key-" + "f" * 40
WRITE_TOOLS = frozenset({"start_run", "claim", "renew", "upload", "submit", "escalate", "send_event", "decide", "cancel"})


# --- environment ----------------------------------------------------------------------------------


def postgres_base() -> str | None:
    """The PostgreSQL server DATABASE_URL points at, as `postgres://netloc`, or None when it is not PostgreSQL."""
    url = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        return None
    return f"postgres://{parts.netloc}"


def psycopg_dsn(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1]


def fault_database(name: str) -> str:
    """Drop and create the fault database `name` on DATABASE_URL's server (bench.common.recreate_database)."""
    from bench import common

    base = postgres_base()
    assert base is not None, "fault tests need DATABASE_URL to be PostgreSQL"
    previous = os.environ.get("BENCH_DATABASE_URL")
    os.environ["BENCH_DATABASE_URL"] = f"{base}/postgres"
    try:
        return common.recreate_database(name)
    finally:
        if previous is None:
            os.environ.pop("BENCH_DATABASE_URL", None)
        else:
            os.environ["BENCH_DATABASE_URL"] = previous


def drop_database(name: str) -> None:
    import psycopg

    base = postgres_base()
    try:
        with psycopg.connect(psycopg_dsn(f"{base}/postgres"), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass  # best effort: the next run recreates it anyway


def sql(url: str, query: str, params=None) -> list[tuple]:
    """Run one statement against a fault database with a fresh connection; return its rows."""
    import psycopg

    with psycopg.connect(psycopg_dsn(url), autocommit=True, connect_timeout=10) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def process_env(url: str, extra: dict | None = None) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": SECRET_KEY,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "PYTHONWARNINGS": "ignore",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def setup_database(url: str, spec: dict, timeout: float = 90) -> dict:
    """Migrate a fault database and create what `spec` names, in a subprocess; return its JSON answer."""
    done = subprocess.run(
        [PYTHON, "-m", "tests.faults.harness", "setup"],
        input=json.dumps(spec), capture_output=True, text=True, cwd=ROOT, env=process_env(url), timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"fault setup failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- servers and workers ------------------------------------------------------------------------


def free_port() -> int:
    from bench.common import free_port as bench_free_port

    return bench_free_port()


class Server:
    """gunicorn as the leader of its own process group, so kill -9 takes the master and every worker.

    stdout (the console email backend) and stderr (gunicorn's and Django's error log) go to files.
    """

    def __init__(self, url: str, logs: Path, name: str, *, workers: int = 2, extra_env: dict | None = None):
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.out_path = logs / f"{name}.out"
        self.err_path = logs / f"{name}.err"
        self._out = open(self.out_path, "wb")  # noqa: SIM115 - closed in stop()
        self._err = open(self.err_path, "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "config.wsgi", "--workers", str(workers), "--bind", f"127.0.0.1:{self.port}",
             "--log-level", "warning", "--backlog", "2048", "--timeout", "60", "--graceful-timeout", "5"],
            cwd=ROOT, env=process_env(url, {"CACHE_KEY_PREFIX": f"{name}-{uuid.uuid4().hex}", **(extra_env or {})}),
            stdout=self._out, stderr=self._err, start_new_session=True,
        )
        self.pgid = self.process.pid  # start_new_session: the master leads a new session and group
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn {name} exited ({self.process.returncode}):\n{self.stderr()[-3000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/healthz")
                if conn.getresponse().status in (200, 503):
                    conn.close()
                    return
            except OSError:
                time.sleep(0.2)
        self.kill9()
        raise RuntimeError(f"gunicorn {name} did not start:\n{self.stderr()[-3000:]}")

    def health(self) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        body = json.loads(response.read())
        conn.close()
        return response.status, body

    def kill9(self) -> None:
        """SIGKILL the whole process group: the master and every worker die mid-request."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        self.process.wait(10)
        _wait_group_gone(self.pgid)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill9()
        _wait_group_gone(self.pgid, kill=True)
        for handle in (self._out, self._err):
            if not handle.closed:
                handle.close()

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def tracebacks(self) -> list[str]:
        """Every traceback the server logged (Django's 500s and gunicorn's worker errors)."""
        return split_tracebacks(self.stderr())


def _wait_group_gone(pgid: int, kill: bool = False, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        if kill:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                return
        time.sleep(0.05)


_RECORD_START = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d|\[\d{4}-\d\d-\d\d )")


def split_tracebacks(text: str) -> list[str]:
    """Split a log into records (each starts with a timestamp) and keep those holding a traceback."""
    records: list[list[str]] = []
    for line in text.splitlines():
        if _RECORD_START.match(line) or not records:
            records.append([line])
        else:
            records[-1].append(line)
    return ["\n".join(lines) for lines in records if any(line.startswith("Traceback (most recent") for line in lines)]


_PROJECT_FRAME = re.compile(r'^  File "' + re.escape(str(ROOT)) + r'/(?!\.venv/)([^"]+)", line (\d+), in (\w+)', re.M)


def origin(traceback: str) -> str:
    """Where a traceback left the project's own code (its deepest frame outside .venv) and what it raised."""
    frames = _PROJECT_FRAME.findall(traceback)
    raised = [line for line in traceback.splitlines() if line and not line.startswith((" ", "Traceback"))
              and re.match(r"^[\w.]+(Error|Exception)\b", line)]
    where = f"{frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}" if frames else "outside the project"
    return f"{where}: {raised[-1].split(':', 1)[0] if raised else '?'}"


class Background:
    """A helper process (a Celery worker or beat) in its own process group, its output in a file."""

    def __init__(self, argv: list[str], url: str, logs: Path, name: str, extra_env: dict | None = None):
        self.name = name
        self.log_path = logs / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=process_env(url, extra_env), stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pgid = self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.pgid, signal.SIGKILL)
                self.process.wait(10)
        _wait_group_gone(self.pgid, kill=True)
        if not self._log.closed:
            self._log.close()


# --- calling tools ------------------------------------------------------------------------------


@dataclass
class Call:
    """One HTTP tool call as the caller saw it: an answer (status and body), or a transport failure."""

    tool: str
    arguments: dict
    agent: int
    port: int
    started: float
    ended: float = 0.0
    status: int | None = None
    body: dict | None = None
    raw: str | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.body and self.body.get("ok"))

    @property
    def data(self) -> dict:
        return self.body["data"]

    @property
    def code(self) -> str | None:
        if self.body and not self.body.get("ok"):
            return (self.body.get("error") or {}).get("code")
        return None

    @property
    def is_retry(self) -> bool:
        """A 503 `retry`, or no answer at all (the connection failed): both mean call again, same requestId."""
        return self.failure is not None or (self.status == 503 and self.code == "retry")

    @property
    def is_server_error(self) -> bool:
        return self.status is not None and self.status >= 500 and not (self.status == 503 and self.code == "retry")

    def describe(self) -> str:
        what = self.failure or f"{self.status} {json.dumps(self.body)[:300] if self.body else (self.raw or '')[:300]}"
        return f"{self.tool} {json.dumps(self.arguments)[:200]} via :{self.port} → {what}"


class CallLog:
    """Every call of a test, from every thread."""

    def __init__(self):
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def add(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def __iter__(self):
        with self._lock:
            return iter(list(self.calls))

    def __len__(self) -> int:
        return len(self.calls)


class ToolFailed(Exception):
    def __init__(self, call: Call):
        super().__init__(call.describe())
        self.call = call


class Client:
    """One agent's keep-alive HTTP connection to one server; every call is recorded, none retried."""

    def __init__(self, port: int, token: str, log: CallLog | None = None, agent: int = 0, timeout: float = 30):
        self.port = port
        self.token = token
        self.log = log
        self.agent = agent
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, tool: str, arguments: dict) -> Call:
        """Send one call exactly once; a write must already carry its requestId."""
        if tool in WRITE_TOOLS:
            assert "requestId" in arguments, "a write needs its requestId before it is sent"
        call = Call(tool=tool, arguments=arguments, agent=self.agent, port=self.port, started=time.monotonic())
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.request("POST", f"/api/tools/{tool}", json.dumps(arguments), self.headers)
            response = self.conn.getresponse()
            payload = response.read()
            call.status = response.status
            if response.will_close:
                self.close()
            try:
                call.body = json.loads(payload)
            except ValueError:
                call.raw = payload[:2000].decode(errors="replace")
        except (OSError, http.client.HTTPException) as exc:
            call.failure = f"{type(exc).__name__}: {exc}"
            self.close()
        call.ended = time.monotonic()
        if self.log is not None:
            self.log.add(call)
        return call

    def tool(self, tool: str, **arguments) -> dict:
        """Call once; return `data`, or raise ToolFailed with the recorded call."""
        if tool in WRITE_TOOLS:
            arguments.setdefault("requestId", str(uuid.uuid4()))
        call = self.call(tool, arguments)
        if not call.ok:
            raise ToolFailed(call)
        return call.data


@dataclass
class Persisted:
    """The outcome of calling until a definitive answer: the final call and how many tries it took."""

    final: Call
    tries: int
    retries: list[Call] = field(default_factory=list)


def call_until_answered(client: Client, tool: str, arguments: dict, *, attempts: int = 40, budget: float = 45,
                        first_delay: float = 0.05, max_delay: float = 1.0, also_retry=None) -> Persisted:
    """Repeat one call (the same requestId) while it gets `retry` or no answer, with bounded backoff.

    `also_retry(call)` may name more answers to try again (a test that records 500s as findings
    still wants to know whether the call goes through afterwards).
    """
    if tool in WRITE_TOOLS:
        arguments.setdefault("requestId", str(uuid.uuid4()))
    deadline = time.monotonic() + budget
    delay = first_delay
    retries: list[Call] = []
    for tries in range(1, attempts + 1):
        call = client.call(tool, arguments)
        again = call.is_retry or (also_retry is not None and also_retry(call))
        if not again or tries == attempts or time.monotonic() > deadline:
            return Persisted(call, tries, retries)
        retries.append(call)
        time.sleep(delay)
        delay = min(max_delay, delay * 2)
    raise AssertionError("unreachable")


def bearer_tokens(server: Server, credentials: list[list[str]]) -> list[str]:
    from bench.common import client_credentials_token

    return [client_credentials_token(server.base, client_id, secret) for client_id, secret in credentials]


def lease_id(token: str) -> str:
    """The lease a claim token names (`apt1.<lease id>.<signature>`)."""
    prefix, lease, _signature = token.split(".")
    assert prefix == "apt1"
    return lease


def run_pk(run_id: str) -> int:
    assert run_id.startswith("r_")
    return int(run_id[2:])


def age_runs(url: str, run_ids: list[str], seconds: int) -> None:
    """Move every clock the runs hold `seconds` into the past (tests/runs/conftest.py `age`, in SQL)."""
    pks = [run_pk(r) for r in run_ids]
    delta = f"{int(seconds)} seconds"
    sql(url, "UPDATE runs_runstep SET lease_expires_at = lease_expires_at - %s::interval, "
             "wake_at = wake_at - %s::interval, due_at = due_at - %s::interval WHERE run_id = ANY(%s)",
        (delta, delta, delta, pks))
    sql(url, "UPDATE runs_lease SET expires_at = expires_at - %s::interval WHERE run_id = ANY(%s)", (delta, pks))
    sql(url, "UPDATE runs_run SET wake_at = wake_at - %s::interval WHERE id = ANY(%s) AND wake_at IS NOT NULL",
        (delta, pks))


def report(title: str, **figures) -> None:
    """Print a test's figures (shown with pytest -s or -rP)."""
    print(f"\n[{title}] " + ", ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


# --- services -------------------------------------------------------------------------------------


def postgres_cluster() -> tuple[str, str] | None:
    """The (version, name) of the local cluster that serves DATABASE_URL's port, as pg_ctlcluster names it."""
    port = str(urlsplit(postgres_base() or "").port or 5432)
    try:
        versions = sorted(os.listdir("/etc/postgresql"))
    except OSError:
        return None
    for version in versions:
        for name in sorted(os.listdir(f"/etc/postgresql/{version}")):
            try:
                config = Path(f"/etc/postgresql/{version}/{name}/postgresql.conf").read_text()
            except OSError:
                continue
            found = re.search(r"^\s*port\s*=\s*(\d+)", config, re.MULTILINE)
            if (found.group(1) if found else "5432") == port:
                return version, name
    return None


def postgres_version() -> str | None:
    cluster = postgres_cluster()
    return cluster[0] if cluster else None


def postgres_ready(timeout: float = 2) -> bool:
    import psycopg

    base = postgres_base()
    try:
        with psycopg.connect(psycopg_dsn(f"{base}/postgres"), connect_timeout=max(1, int(timeout))) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def wait_postgres(timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if postgres_ready():
            return True
        time.sleep(0.2)
    return False


def pg_ctlcluster(action: str, timeout: float = 90) -> subprocess.CompletedProcess:
    cluster = postgres_cluster()
    assert cluster, "no PostgreSQL cluster under /etc/postgresql serves DATABASE_URL's port"
    return subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", *cluster, action],
                          capture_output=True, text=True, timeout=timeout)


def ensure_postgres() -> bool:
    if postgres_ready():
        return True
    if postgres_version():
        pg_ctlcluster("start")
    return wait_postgres(60)


REDIS_PORT = 6379


def redis_up() -> bool:
    """PING over a plain socket: quick either way (redis-py retries a refused connection)."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(timeout: float = 30) -> bool:
    if redis_up():
        return True
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(REDIS_PORT),
         "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"],
        capture_output=True, timeout=30,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if redis_up():
            return True
        time.sleep(0.1)
    return False


def stop_redis(timeout: float = 30) -> bool:
    subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(REDIS_PORT), "shutdown", "nosave"],
                   capture_output=True, timeout=30)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not redis_up():
            return True
        time.sleep(0.1)
    return False


# --- the setup subprocess -----------------------------------------------------------------------


def _setup_main() -> None:
    """Run with DATABASE_URL set to a fault database; read the spec from stdin, print credentials."""
    spec = json.loads(sys.stdin.read())
    sys.path.insert(0, str(ROOT))
    from bench.common import setup_django

    setup_django(os.environ["DATABASE_URL"])

    from django.contrib.auth.hashers import PBKDF2PasswordHasher
    from django.db import transaction

    # Client secrets are hashed on purpose slowly; a test's throwaway secrets need not be. The server
    # verifies these cheaper PBKDF2 hashes with its stock hasher (the iteration count is in the hash).
    PBKDF2PasswordHasher.iterations = 1000

    from accounts.models import Group, Membership, Organization, User
    from accounts.oauth import create_agent
    from processes.publishing import import_process

    org = Organization.objects.get(slug="default")
    people = {}
    with transaction.atomic():
        for person in spec.get("people", []):
            user = User.objects.create_user(person["email"], "a-Long-fault-passw0rd")
            Membership.objects.create(user=user, organization=org, is_operator=person.get("operator", False))
            for name in person.get("groups", []):
                group, _ = Group.objects.get_or_create(organization=org, name=name)
                group.members.add(user)
            people[person["email"]] = user.pk
    versions = {}
    for process in spec.get("processes", []):
        outcome = import_process(organization=org, text=process["text"], bindings=process.get("bindings") or {},
                                 publish=True)
        assert outcome.status == "published", outcome.lines()
        versions[outcome.version.process.name] = outcome.version.sha256
    agents = [list(create_agent(organization=org, name=f"fault-{i}")[1:]) for i in range(spec.get("agents", 0))]
    print(json.dumps({"agents": agents, "people": people, "versions": versions}))


if __name__ == "__main__":
    if sys.argv[1:] == ["setup"]:
        _setup_main()
    else:
        sys.exit("usage: python -m tests.faults.harness setup < spec.json")
