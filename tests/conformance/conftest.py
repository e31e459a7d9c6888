"""The conformance runner installed in a fresh virtualenv, and a gunicorn server prepared for it."""

import json
import os
import subprocess
import sys

import pytest

from tests.config.nodes import gunicorn_node

from . import harness


@pytest.fixture(scope="session")
def runner_command(tmp_path_factory):
    """Install conformance/runner into a new virtualenv, so that nothing of the server is importable."""
    venv = tmp_path_factory.mktemp("runner-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(harness.RUNNER)],
                               capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return str(venv / "bin" / "agentprocess-conformance")


@pytest.fixture(scope="session")
def conformance_server(tmp_path_factory):
    """A gunicorn node (on PostgreSQL when DATABASE_URL is PostgreSQL) with agents, people and fixtures."""
    tmp_path = tmp_path_factory.mktemp("conformance-node")
    with gunicorn_node(tmp_path, postgres=True, LEASE_SECONDS=harness.LEASE_SECONDS) as (base, env, _, err):
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
