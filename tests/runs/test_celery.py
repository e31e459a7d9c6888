"""The sweep through Celery and Redis for real: beat's task, run by a worker (issue: timers)."""

import os
import time

import pytest

from config.celery import app
from runs.models import RunStep
from tests.runs.conftest import age
from tests.runs.test_waits_events import WAITS

pytestmark = pytest.mark.django_db(transaction=True)


def test_beat_schedules_the_sweep_every_sweep_seconds(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-due-runs"]
    assert entry["task"] == "runs.tasks.sweep" and entry["schedule"] == float(settings.SWEEP_SECONDS)
    app.loader.import_default_modules()  # what a worker does at start: autodiscover the apps' tasks
    assert "runs.tasks.sweep" in app.tasks


def test_a_worker_runs_the_sweep_sent_through_redis(publish, agent):
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL is not set: this test needs a real Redis broker")
    from celery.contrib.testing.worker import start_worker

    from runs.tasks import sweep

    publish(WAITS)
    run_id = agent.write("start_run", process="waits", inputs={"at": "2020-01-01T00:00:00Z"})["run"]["id"]
    age(run_id, 3601)
    app.conf.update(broker_url=url, task_always_eager=False)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            sweep.delay()
            deadline = time.monotonic() + 20
            state = None
            while time.monotonic() < deadline:
                state = RunStep.objects.get(run_id=int(run_id[2:]), step_id="work").state
                if state == "ready":
                    break
                time.sleep(0.2)
        assert state == "ready"
    finally:
        app.conf.update(task_always_eager=settings_eager())


def settings_eager() -> bool:
    from django.conf import settings

    return settings.CELERY_TASK_ALWAYS_EAGER
