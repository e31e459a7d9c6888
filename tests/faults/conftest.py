"""Fault tests: each spawns its own gunicorn servers against its own PostgreSQL database.

They need DATABASE_URL to point at PostgreSQL (its server also holds the fault databases) and run
only with `-m slow` (CI: `SLOW=1 make test`). Every test leaves PostgreSQL and Redis running.
"""

from __future__ import annotations

import os

import pytest

from tests.faults import harness


@pytest.fixture(autouse=True)
def needs_postgres():
    if harness.postgres_base() is None:
        pytest.skip("fault tests need PostgreSQL: set DATABASE_URL=postgres://… (CI: postgres://postgres@127.0.0.1:5432/test)")


@pytest.fixture(autouse=True)
def services_left_running(needs_postgres):
    """Whatever a fault test stopped comes back, checked, even when the test failed."""
    redis_was_up = harness.redis_up()
    yield
    problems = []
    if not harness.ensure_postgres():
        problems.append("PostgreSQL is not running after the test and could not be started")
    if redis_was_up and not harness.start_redis():
        problems.append("Redis is not running after the test and could not be started")
    # A restarted PostgreSQL has cut the pytest process's own connections to the test database:
    # close them so the next test connects afresh (closing never touches the database).
    from django.db import connections

    connections.close_all()
    assert not problems, "; ".join(problems)


@pytest.fixture
def logs(tmp_path):
    """Where this test's servers and workers write stdout and stderr (shown on failure)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


@pytest.fixture
def redis_url():
    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis://"):
        pytest.skip("this fault test needs REDIS_URL=redis://127.0.0.1:6379/0 (a Redis it may stop and start)")
    return url

