"""/metrics: tool calls, runs, leases, notices and sweeps counted; steps and lag read at the scrape; protected."""

from __future__ import annotations

import concurrent.futures

import pytest
import requests
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.config.nodes import gunicorn_node, manage

ONE_STEP = """---
name: metered
description: One agent step.
inputs:
  ticket: string
steps:
  - id: work
    agent: Do the work.
    output:
      n: number
  - id: done
    finish: ok
---
"""


def samples(text: str) -> dict[tuple, float]:
    """Every sample of a scrape, keyed by (name, sorted labels)."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(scrape: dict, name: str, **labels) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client: Client, **headers) -> dict:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return samples(response.content.decode())


def test_tool_calls_runs_and_steps_are_counted(publish, agent, django_capture_on_commit_callbacks):
    publish(ONE_STEP)
    client = Client()
    before = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):  # runs are counted once their write commits
        views = [agent.write("start_run", process="metered", inputs={"ticket": f"SECRET-{i}"}) for i in range(3)]
        token = agent.write("claim", runId=views[0]["run"]["id"], stepId="work")["token"]
        agent.fails("submit", "not_accepted", token=token, output={"n": "not a number"}, summary="Tried.",
                    requestId="refused-once")
        agent.write("submit", token=token, output={"n": 1}, summary="Done.")
    after = scrape(client)

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("agentprocess_tool_calls_total", tool="start_run", code="ok") == 3
    assert grew("agentprocess_tool_calls_total", tool="submit", code="not_accepted") == 1
    assert grew("agentprocess_tool_calls_total", tool="submit", code="ok") == 1
    assert grew("agentprocess_tool_call_seconds_count", tool="start_run") == 3
    assert grew("agentprocess_runs_started_total", process="metered", mode="live") == 3
    assert grew("agentprocess_runs_ended_total", process="metered", outcome="ok") == 1
    # Now: two runs with their agent step ready, nothing claimed, nothing overdue, no sweep behind.
    assert value(after, "agentprocess_steps", state="ready", kind="agent") == 2
    assert value(after, "agentprocess_steps", state="claimed", kind="agent") == 0
    assert value(after, "agentprocess_steps_overdue") == 0
    assert value(after, "agentprocess_sweep_lag_seconds") == 0
    assert grew("agentprocess_http_responses_total", status="2xx") >= 1  # the first scrape


def test_a_scrape_carries_no_run_data_people_or_tokens(publish, agent, make_person):
    publish(ONE_STEP)
    person = make_person("alice.secret@example.com", operator=True)
    view = agent.write("start_run", process="metered", inputs={"ticket": "CLAIM-CONFIDENTIAL-77"})
    token = agent.write("claim", runId=view["run"]["id"], stepId="work")["token"]
    text = Client().get("/metrics").content.decode()
    for secret in ("CLAIM-CONFIDENTIAL-77", "alice.secret", token, person.ref, view["run"]["id"]):
        assert secret not in text


def test_lease_expiry_and_sweep_lag_are_seen(publish, agent, settings):
    from runs import timers
    from runs.models import Run
    from tests.runs.conftest import age

    publish(ONE_STEP)
    view = agent.write("start_run", process="metered", inputs={"ticket": "T"})
    agent.write("claim", runId=view["run"]["id"], stepId="work")
    client = Client()
    before = scrape(client)
    age(view["run"]["id"], settings.LEASE_SECONDS + 60)  # the lease ran out a minute ago, nobody swept
    lagging = scrape(client)
    assert value(lagging, "agentprocess_sweep_lag_seconds") >= 60
    timers.sweep()
    after = scrape(client)
    assert value(after, "agentprocess_leases_expired_total") - value(before, "agentprocess_leases_expired_total") == 1
    assert value(after, "agentprocess_sweeps_total") - value(before, "agentprocess_sweeps_total") == 1
    assert value(after, "agentprocess_sweep_lag_seconds") == 0
    assert value(after, "agentprocess_steps", state="ready", kind="agent") == 1
    assert Run.objects.get(pk=int(view["run"]["id"][2:])).wake_at is None


@pytest.mark.django_db
def test_a_scrape_needs_an_allowed_network_or_the_token(settings):
    import ipaddress

    client = Client()
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200  # loopback, by default
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 403 and b"agentprocess_" not in refused.content
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    settings.METRICS_ALLOWED_NETWORKS = []  # token only
    anonymous = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token",
                      REMOTE_ADDR="203.0.113.9").status_code == 200
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403
    assert client.post("/metrics").status_code == 405


@pytest.mark.slow
def test_two_gunicorn_workers_add_up_their_counts(tmp_path):
    metrics_dir = tmp_path / "metrics"
    with gunicorn_node(tmp_path, WEB_CONCURRENCY="2", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)) as (base, env, _, _):
        (tmp_path / "PROCESS.md").write_text(ONE_STEP)
        manage(env, "import_process", str(tmp_path / "PROCESS.md"), "--publish")
        printed = manage(env, "add_agent", "metered-agent")
        credentials = dict(line.split("=", 1) for line in printed.split() if "=" in line)
        token = requests.post(f"{base}/identity/o/api/token", timeout=30,
                              auth=(credentials["CLIENT_ID"], credentials["CLIENT_SECRET"]),
                              data={"grant_type": "client_credentials", "scope": "agentprocess"}).json()
        headers = {"Authorization": f"Bearer {token['access_token']}"}

        def start(index: int) -> int:
            with requests.Session() as session:  # a connection of its own: either worker may take it
                return session.post(f"{base}/api/tools/start_run", headers=headers, timeout=60,
                                    json={"process": "metered", "inputs": {"ticket": f"T{index}"},
                                          "requestId": f"metered-{index}"}).status_code

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert set(pool.map(start, range(40))) == {200}
        refused = requests.post(f"{base}/api/tools/start_run", headers=headers, json={"process": "nope"}, timeout=30)
        assert refused.status_code in (400, 404)
        scraped = samples(requests.get(f"{base}/metrics", timeout=30).text)
        workers = {path.name.rsplit("_", 1)[-1] for path in metrics_dir.glob("counter_*.db")}
        assert value(scraped, "agentprocess_tool_calls_total", tool="start_run", code="ok") == 40, workers
        assert value(scraped, "agentprocess_runs_started_total", process="metered", mode="live") == 40
        assert value(scraped, "agentprocess_tool_call_seconds_count", tool="start_run") == 41
        assert value(scraped, "agentprocess_steps", state="ready", kind="agent") == 40
        # Answers of the other kinds are counted by class, from every worker.
        assert value(scraped, "agentprocess_http_responses_total", status="4xx") >= 1
