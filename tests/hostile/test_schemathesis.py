"""schemathesis's CLI against /api/schema/ over real HTTP with every check: no 500, nothing outside its schema.

The CLI runs all its phases: the schema's examples, the coverage of every boundary (a version at the
schema's maximum, say), generated cases and stateful sequences, so a value that only breaks a statement
once that statement is prepared on the connection is still reached. docs/deploy.md gives the longer run.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 60


@pytest.fixture
def bearer(live_server, publish):
    """A real agent token from the client-credentials grant, and published processes to act on."""
    from accounts.models import Organization
    from accounts.oauth import create_agent
    from tests.runs.test_agent_loop import ONE_STEP, ROUTES

    org = Organization.objects.get_or_create(slug="default", defaults={"name": "Default"})[0]
    publish(ONE_STEP, organization=org)
    publish(ROUTES, organization=org)
    _, client_id, secret = create_agent(organization=org, name="fuzzer")
    metadata = requests.get(f"{live_server.url}/.well-known/oauth-authorization-server", timeout=10).json()
    answer = requests.post(metadata["token_endpoint"], auth=(client_id, secret), timeout=10,
                           data={"grant_type": "client_credentials", "scope": "agentprocess"})
    return answer.json()["access_token"]


def test_every_tool_answers_within_its_schema_under_every_check(bearer, live_server, tmp_path):
    command = [
        str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(ROOT / "schemathesis.toml"),
        "run", f"{live_server.url}/api/schema/", "--checks", "all", "--max-examples", str(EXAMPLES),
        "--header", f"Authorization: Bearer {bearer}", "--seed", "1", "--generation-deterministic",
        "--continue-on-failure", "--no-color",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "14 passed" in done.stdout or "passed" in done.stdout, done.stdout[-3000:]
