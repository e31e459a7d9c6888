"""Shared benchmark plumbing: a private PostgreSQL database, a gunicorn server, an HTTP agent."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def database_url(name: str) -> str:
    base = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}/{name}"


def recreate_database(name: str) -> str:
    """Drop and create a database for one benchmark; return its URL."""
    import psycopg

    admin = database_url("postgres")
    with psycopg.connect(admin.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_url(name)


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import warnings

    warnings.filterwarnings("ignore")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def database_settings() -> str:
    """The database server's version and the settings that move a write's cost, for a benchmark's header."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return f"database: {connection.vendor}"
    names = ("synchronous_commit", "fsync", "full_page_writes", "autovacuum", "shared_buffers")
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0].split()[0]
        values = []
        for name in names:
            cursor.execute(f"SHOW {name}")
            values.append(f"{name} {cursor.fetchone()[0]}")
    return f"PostgreSQL {version}: " + ", ".join(values)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn with one worker per core, against the benchmark database.

    Workers are gthread with `threads` threads (keep-alive, as behind a proxy that pools its upstream
    connections); `threads=0` gives sync workers, which close every connection after one request.
    """

    def __init__(self, url: str, *, workers: int | None = None, threads: int = 1, extra_env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "ROOT_URLCONF": "bench.urls",
            "PYTHONWARNINGS": "ignore",
            **(extra_env or {}),
        }
        workers = workers or os.cpu_count() or 2
        # The server's warnings go to a file, read back when something failed: a pipe nobody reads
        # would fill and stop the server.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (open for the server's life; closed in stop)
        self.process = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "config.wsgi", "--workers", str(workers), "--bind", f"127.0.0.1:{self.port}",
             *(["--worker-class", "gthread", "--threads", str(threads)] if threads else []),
             "--log-level", "warning", "--backlog", "2048"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=self.log,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status in (200, 503):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not start: " + self.log_tail())

    def log_tail(self, size: int = 4000) -> str:
        """The end of what the server wrote to its stderr."""
        self.log.seek(0, os.SEEK_END)
        self.log.seek(max(0, self.log.tell() - size))
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


class Agent:
    """One keep-alive HTTP connection calling tools with a bearer token; records each call's latency."""

    def __init__(self, port: int, token: str, latencies: dict):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.latencies = latencies

    def post(self, path: str, body: dict, label: str) -> tuple[int, dict]:
        payload = json.dumps(body)
        for attempt in range(3):
            started = time.perf_counter()
            try:
                self.conn.request("POST", path, payload, self.headers)
                response = self.conn.getresponse()
                data = json.loads(response.read())
            except (OSError, http.client.HTTPException):
                self.conn.close()
                if attempt == 2:
                    raise
                continue
            self.latencies.setdefault(label, []).append(time.perf_counter() - started)
            return response.status, data
        raise RuntimeError("unreachable")

    def tool(self, tool: str, **arguments) -> dict:
        if tool in {"start_run", "claim", "renew", "upload", "submit", "escalate", "send_event", "decide", "cancel"}:
            arguments.setdefault("requestId", str(uuid.uuid4()))
        status, body = self.post(f"/api/tools/{tool}", arguments, tool)
        if not body.get("ok"):
            raise ToolFailed(tool, status, body.get("error"))
        return body["data"]


class ToolFailed(Exception):
    def __init__(self, tool, status, error):
        super().__init__(f"{tool} → {status} {error}")
        self.error = error or {}


def client_credentials_token(base: str, client_id: str, secret: str) -> str:
    import base64

    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", "/.well-known/oauth-authorization-server")
    token_path = urlsplit(json.loads(conn.getresponse().read())["token_endpoint"]).path
    auth = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    conn.request("POST", token_path, "grant_type=client_credentials&scope=agentprocess",
                 {"Authorization": f"Basic {auth}", "Content-Type": "application/x-www-form-urlencoded"})
    return json.loads(conn.getresponse().read())["access_token"]


def _stat(pid: int) -> tuple[str, list[str]] | None:
    """A process's name and the fields of /proc/<pid>/stat after it (state, parent, ...), or None."""
    try:
        head, rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    except (OSError, ValueError):
        return None
    return head.split("(", 1)[1], rest.split()


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(roots) -> float:
    """User plus system CPU seconds a process tree has used so far (Linux /proc).

    Each root counts its own time and that of the children it has reaped, so a child that exits
    between two readings (a database backend, an autovacuum worker) still counts; live descendants
    count their own.
    """
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for root in roots:
        stat = _stat(root)
        if stat is None:
            continue
        total += sum(int(value) for value in stat[1][11:15])
        pending = _children(root)
        while pending:
            pid = pending.pop()
            stat = _stat(pid)
            if stat is not None:
                total += int(stat[1][11]) + int(stat[1][12])
            pending.extend(_children(pid))
    return total / tick


def postgres_roots() -> list[int]:
    """The postmaster of each PostgreSQL cluster on this machine."""
    processes = {}  # pid: (name, parent pid)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            processes[int(entry.name)] = (stat[0], int(stat[1][1]))
    return [
        pid for pid, (name, parent) in processes.items()
        if name == "postgres" and processes.get(parent, ("",))[0] != "postgres"
    ]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def latency_table(latencies: dict[str, list[float]], elapsed: float) -> list[str]:
    lines = [f"  {'tool':<14}{'calls':>8}{'calls/s':>10}{'mean ms':>10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"]
    for tool, values in sorted(latencies.items()):
        lines.append(
            f"  {tool:<14}{len(values):>8}{len(values) / elapsed:>10.1f}{statistics.fmean(values) * 1000:>10.1f}"
            f"{percentile(values, 0.5) * 1000:>9.1f}{percentile(values, 0.95) * 1000:>9.1f}"
            f"{percentile(values, 0.99) * 1000:>9.1f}"
        )
    return lines


def measure(call, samples: int) -> tuple[float, float, float, int]:
    """Run `call` `samples` times in this process: mean, median and 95th percentile ms, and its SQL queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    queries = 0
    for _ in range(samples):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        queries = len(captured)
    return statistics.fmean(times) * 1000, percentile(times, 0.5) * 1000, percentile(times, 0.95) * 1000, queries


def page(client, path: str):
    """A call that asks for one page through Django's test client and insists it is there (200)."""

    def get():
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)

    return get
