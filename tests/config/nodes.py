"""An app node as production starts one: gunicorn with config/gunicorn.py, on a SQLite file of its own."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

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


@contextlib.contextmanager
def gunicorn_node(tmp_path: Path, **extra: str):
    """Yield (base URL, env, stdout path, stderr path) of a migrated node that answers /healthz."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "LOG_LEVEL": "INFO",
           "BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1", "DEBUG": "0",
           "SECRET_KEY": "node-test-" + "k" * 50, "PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage(env, "migrate", "-v", "0")
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi"],
                                  cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
    try:
        base = f"http://127.0.0.1:{port}"
        # Waits on the node answering, with a bound far above any start-up on a busy machine.
        deadline = time.monotonic() + 120
        while True:
            try:
                requests.get(f"{base}/healthz?probe=1", timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None, err.read_text()
                time.sleep(0.2)
        yield base, env, out, err
    finally:
        server.terminate()
        server.wait(timeout=60)
