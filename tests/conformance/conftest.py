"""The conformance runner installed in a virtualenv of its own, and a gunicorn server prepared for it."""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.config.nodes import gunicorn_node

from . import harness

# Virtualenvs with the runner installed, one per version of its source; CI starts without any.
VENVS = harness.ROOT / "var" / "conformance-runner"
INSTALLED = "installed"


def source_key() -> str:
    """A digest of everything pip installs from conformance/runner."""
    digest = hashlib.sha256()
    for path in sorted(harness.RUNNER.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path) and "build" not in path.parts:
            digest.update(str(path.relative_to(harness.RUNNER)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def install_runner(venv: Path) -> None:
    """Create venv and pip-install conformance/runner into it, so that nothing of the server is importable."""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(harness.RUNNER)],
                               capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]
    (venv / INSTALLED).touch()


@pytest.fixture(scope="session")
def runner_command():
    """The runner's console script in a virtualenv holding only the runner and its dependencies."""
    VENVS.mkdir(parents=True, exist_ok=True)
    venv = VENVS / source_key()
    with open(VENVS / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test session may be installing the same one
        if not (venv / INSTALLED).exists():
            for other in VENVS.iterdir():
                # Earlier versions' virtualenvs, left alone while a session started within the hour may use one.
                if other.is_dir() and time.time() - other.stat().st_mtime > 3600:
                    shutil.rmtree(other, ignore_errors=True)
            install_runner(venv)
    return str(venv / "bin" / "agentprocess-conformance")


@pytest.fixture(scope="session")
def conformance_server(tmp_path_factory):
    """A gunicorn node (on PostgreSQL when DATABASE_URL is PostgreSQL) with agents, people and fixtures."""
    tmp_path = tmp_path_factory.mktemp("conformance-node")
    # The runner signs its people in many times over: a login rate far above allauth's default.
    with gunicorn_node(tmp_path, postgres=True, LEASE_SECONDS=harness.LEASE_SECONDS,
                       ACCOUNT_LOGIN_RATE="1000/m/ip") as (base, env, _, err):
        yield base, env, harness.prepare(env), err


@pytest.fixture
def run_runner(runner_command, tmp_path):
    """Run the installed runner with a configuration; return (exit status, JSON report, printed output)."""

    def run(config: dict, *arguments: str, timeout: int = 600):
        path, report = tmp_path / "conformance.json", tmp_path / "report.json"
        path.write_text(json.dumps(config))
        environment = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO")}
        done = subprocess.run([runner_command, "--config", str(path), "--report-json", str(report),
                               "--junit", str(tmp_path / "report.xml"), *arguments],
                              cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=timeout, check=False)
        output = done.stdout + done.stderr
        assert report.exists(), output[-5000:]
        return done.returncode, json.loads(report.read_text()), output

    return run
