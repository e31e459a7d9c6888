"""An app node as production starts one: gunicorn with config/gunicorn.py, on a database of its own.

The database is a SQLite file, or with `postgres=True` and DATABASE_URL naming PostgreSQL, a database
created beside DATABASE_URL's (its name with `_node` added) and dropped afterwards.
"""

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def manage(env: dict, *arguments: str) -> str:
    """Run a management command against the node's database and return what it printed."""
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, check=True, timeout=120,
                          capture_output=True, text=True)
    return done.stdout


def postgres_url() -> str | None:
    """DATABASE_URL when it names PostgreSQL, else None."""
    url = os.environ.get("DATABASE_URL", "")
    return url if urlsplit(url).scheme in {"postgres", "postgresql", "pgsql"} else None


def node_database(tmp_path: Path, postgres: bool) -> tuple[str, Callable[[], None]]:
    """Return the node's DATABASE_URL and how to drop its database afterwards."""
    base = postgres_url() if postgres else None
    if base is None:
        return f"sqlite:///{tmp_path / 'db.sqlite3'}", lambda: None
    import psycopg

    parts = urlsplit(base)
    name = parts.path.lstrip("/") + "_node"
    maintenance = "postgresql://" + parts.netloc + "/postgres"

    def execute(statement: str) -> None:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as connection:
            connection.execute(statement)

    execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path="/" + name)), lambda: execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def gunicorn_node(tmp_path: Path, *, postgres: bool = False, **extra: str):
    """Yield (base URL, env, stdout path, stderr path) of a migrated node that answers /healthz."""
    port = free_port()
    database_url, drop_database = node_database(tmp_path, postgres)
    env = {**os.environ, "DATABASE_URL": database_url, "LOG_LEVEL": "INFO",
           "BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1", "DEBUG": "0",
           "SECRET_KEY": "node-test-" + "k" * 50, "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    try:
        manage(env, "migrate", "-v", "0")
        with serving(env, tmp_path) as (out, err):
            yield f"http://127.0.0.1:{port}", env, out, err
    finally:
        drop_database()


@contextlib.contextmanager
def serving(env: dict, tmp_path: Path):
    """Run gunicorn with env until the block ends; yield its stdout and stderr paths once it answers."""
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi"],
                                  cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
    try:
        base = "http://" + env["BIND"]
        # Waits on the node answering, with a bound far above any start-up on a busy machine.
        deadline = time.monotonic() + 120
        while True:
            try:
                requests.get(f"{base}/healthz?probe=1", timeout=5)
                break
            except (requests.ConnectionError, requests.Timeout):  # a busy machine may be slow to answer
                assert time.monotonic() < deadline and server.poll() is None, err.read_text()
                time.sleep(0.2)
        yield out, err
    finally:
        server.terminate()
        server.wait(timeout=60)
