"""A start_run on the version this process found last for the same name (runs.tools): one statement,
applied only past a guard that finds the version still the one a read would, and every answer a read
would give: a version published since, a requestId again, a refusal."""

import pytest
from django.db import connection

from runs import tools
from runs.models import Run
from tests.runs.conftest import rid
from tests.runs.test_round_trips import trips

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ONE = """---
name: guessed
description: One step, one input.
inputs:
  tag: string
steps:
  - id: work
    agent: Work.
  - id: done
    finish: ok
---
"""
# Version 2 takes the same inputs: a stale guess would start version 1 without a word.
TWO = ONE.replace("description: One step, one input.", "description: One step, one input, again.")
# Version 3 takes another input too.
THREE = ONE.replace("inputs:\n  tag: string", "inputs:\n  tag: string\n  n: number")


@pytest.fixture(autouse=True)
def needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("a start_run on a guess is an optimistic write, which is PostgreSQL's (DATABASE_URL is not PostgreSQL)")


def _started(agent, **arguments) -> dict:
    return agent.write("start_run", process="guessed", **arguments)["run"]


def test_a_start_run_on_the_version_found_last_is_one_round_trip(publish, agent):
    # spec §4: one write, one statement.
    publish(ONE)
    _started(agent, inputs={"tag": "a"})
    assert tools.started_versions
    # Warm: the run key's pool filled (runs.snapshots.keys_ahead), the statement prepared by psycopg.
    connection.ensure_connection()
    for _ in range((connection.connection.prepare_threshold or 0) + 1):
        _started(agent, inputs={"tag": "b"})
    assert trips(lambda: _started(agent, inputs={"tag": "c"})) == 1
    # A process that has not started this process yet reads its version and the requestId first.
    tools.started_versions.clear()
    assert trips(lambda: _started(agent, inputs={"tag": "d"})) == 2
    assert trips(lambda: _started(agent, inputs={"tag": "e"})) == 1


def test_a_version_published_since_is_the_one_started(publish, agent):
    # spec §3.1: start_run without a version starts the newest published one.
    publish(ONE)
    assert _started(agent, inputs={"tag": "a"})["version"] == 1
    assert _started(agent, inputs={"tag": "a"})["version"] == 1  # on the guess
    publish(TWO)
    assert _started(agent, inputs={"tag": "a"})["version"] == 2  # the guard found version 1 no longer the newest
    assert _started(agent, inputs={"tag": "a"})["version"] == 2
    # A version asked for by number is that one, guessed or read.
    assert _started(agent, version=1, inputs={"tag": "a"})["version"] == 1
    assert _started(agent, version=1, inputs={"tag": "a"})["version"] == 1
    publish(THREE)
    # Version 2's inputs no longer fit the newest, though version 2 was the one found last.
    error = agent.fails("start_run", "invalid", process="guessed", inputs={"tag": "a"}, requestId=rid())
    assert error["issues"] == ["inputs.n: missing"]
    assert _started(agent, inputs={"tag": "a", "n": 1})["version"] == 3


def test_a_requestid_again_answers_with_its_record(publish, agent):
    # spec §4: a write again with its requestId answers as the first did, and does nothing more.
    publish(ONE)
    _started(agent, inputs={"tag": "warm"})
    request_id = rid()
    first = agent("start_run", process="guessed", inputs={"tag": "a"}, requestId=request_id)
    count = Run.objects.count()
    assert agent("start_run", process="guessed", inputs={"tag": "a"}, requestId=request_id) == first
    assert Run.objects.count() == count


@pytest.mark.parametrize("guessed", [True, False], ids=["on-a-guess", "read"])
def test_a_requestid_used_otherwise_is_a_conflict_before_any_refusal(publish, agent, guessed):
    # spec §4: a requestId used with other arguments is `conflict`, even where the new ones are refused.
    publish(ONE)
    request_id = rid()
    agent("start_run", process="guessed", inputs={"tag": "a"}, requestId=request_id)
    if not guessed:
        tools.started_versions.clear()
    for inputs in ({"tag": "b"}, {"tag": 5}):
        error = agent.fails("start_run", "conflict", process="guessed", inputs=inputs, requestId=request_id)
        assert error["issues"] == ["request_id_reused"]
        if not guessed:
            tools.started_versions.clear()


def test_a_refusal_is_the_same_on_a_guess_and_read(publish, agent):
    publish(ONE)
    answers = []
    for guessed in (False, True):
        if not guessed:
            tools.started_versions.clear()
        else:
            _started(agent, inputs={"tag": "warm"})
        answers.append(agent.fails("start_run", "invalid", process="guessed", inputs={"tag": 1, "more": 2},
                                   requestId=rid()))
    assert answers[0] == answers[1]
    assert answers[0]["issues"]


def test_a_start_run_too_large_for_one_statement_is_written_in_a_transaction(publish, agent, monkeypatch):
    # A new run whose rows carry more values than one statement can bind goes through the requestId's
    # look-up and a transaction: never as one statement, and the guess stays, being right.
    from base import sending

    publish(ONE)
    connection.ensure_connection()
    for _ in range((connection.connection.prepare_threshold or 0) + 2):
        _started(agent, inputs={"tag": "warm"})
    assert trips(lambda: _started(agent, inputs={"tag": "small"})) == 1
    monkeypatch.setattr(sending, "ONE_STATEMENT_PARAMS", 20)
    assert trips(lambda: _started(agent, inputs={"tag": "large"})) > 1
    assert Run.objects.filter(data__inputs__tag="large").count() == 1
    assert tools.started_versions
    monkeypatch.undo()
    assert trips(lambda: _started(agent, inputs={"tag": "small"})) == 1
