"""Several SELECTs read as one prepared statement of JSON (base.json_rows) build the very instances the
rows themselves would: every field's value and type, for every model of the project it may read."""

import datetime as dt

import pytest
from django.apps import apps
from django.db import connection

from base import json_rows, sql
from runs.models import Passage, Run, RunStep, Upload
from tests.runs.conftest import b64, rid

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FLOW = """---
name: json-rows
description: An agent works, waits for an event, a person approves.
inputs:
  tag: string
steps:
  - id: work
    agent: Work.
    output:
      n: number
      note: string
  - id: settle
    wait_for: settled
    next: check
  - id: check
    person: checkers
    approve: Check.
  - id: done
    finish: ok
---
"""


def _fields(obj) -> dict:
    return {name: (value, type(value)) for name, value in vars(obj).items() if name != "_state"}


def _every_row_read_both_ways(model) -> tuple[list, list]:
    # One query alone goes by Django's cursor and converters; with a second beside it, as JSON.
    alone = sql.select(model, "1 = 1", [])
    as_json, _other = sql.select_many([(model, "1 = 1", [], ""), (Run, "1 = 0", [], "")])
    key = model._meta.pk.attname
    return sorted(alone, key=lambda obj: getattr(obj, key)), sorted(as_json, key=lambda obj: getattr(obj, key))


@pytest.fixture
def every_kind_of_row(publish, agent, person_caller):
    if connection.vendor != "postgresql":
        pytest.skip("JSON rows are PostgreSQL's (DATABASE_URL is not PostgreSQL)")
    publish(FLOW)
    checker = person_caller("c@example.com", groups=["checkers"])
    run_id = agent("start_run", process="json-rows", inputs={"tag": "é ☃ 𝄞"}, requestId=rid())["run"]["id"]
    token = agent("claim", runId=run_id, stepId="work", requestId=rid())["token"]
    token = agent("renew", token=token, progress="half way", requestId=rid())["token"]
    agent("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"abc"), requestId=rid())
    # Numbers JSON spells in more than one way: an integral float, a large integer, a small fraction.
    agent("submit", token=token, output={"n": 1e21, "note": "1.0 \u2028 \"quoted\""}, summary="s", requestId=rid())
    agent("send_event", runId=run_id, name="settled", data={"at": 2.0, "tiny": 1e-7}, requestId=rid())
    [item] = agent("get_run", runId=run_id)["workItems"]
    checker("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved",
            requestId=rid())
    # A float column holding an integral value, which JSON writes as an integer.
    Passage.objects.filter(pk=Passage.objects.order_by("pk").values("pk")[:1]).update(seconds=3.0)
    return run_id


def test_every_model_json_serves_builds_as_its_rows_do(every_kind_of_row):
    served = [model for model in apps.get_models() if json_rows.serves([(model, "", [], "")])]
    assert {Run, RunStep, Passage} <= set(served)
    compared = 0
    for model in served:
        alone, as_json = _every_row_read_both_ways(model)
        assert [_fields(obj) for obj in as_json] == [_fields(obj) for obj in alone], model._meta.label
        assert all(obj._state.adding is False and obj._state.db == "default" for obj in as_json)
        compared += len(alone)
    assert compared > 20
    [passage] = [p for p in sql.select(Passage, "1 = 1", []) if p.seconds == 3.0]
    assert type(passage.seconds) is float
    [run] = _every_row_read_both_ways(Run)[1]
    assert run.data["inputs"]["tag"] == "é ☃ 𝄞"
    assert isinstance(run.started_at, dt.datetime) and run.started_at.utcoffset() == dt.timedelta(0)


def test_a_batch_json_cannot_spell_goes_as_rows(every_kind_of_row):
    # An uploaded file's bytes have no JSON form; rows in an order of their own must keep it.
    assert not json_rows.serves([(Upload, "", [], "")])
    assert not json_rows.serves([(RunStep, "", [], "ORDER BY t.position DESC")])
    [uploads, steps] = sql.select_many([(Upload, "1 = 1", [], ""), (RunStep, "1 = 1", [], "ORDER BY t.position DESC")])
    assert bytes(uploads[0].content) == b"abc"
    assert [step.position for step in steps] == sorted((step.position for step in steps), reverse=True)


def test_raw_selects_come_back_as_tuples_and_empty_reads_as_nothing(every_kind_of_row):
    found, none, numbers = sql.select_many(
        [(Run, "1 = 1", [], ""), (RunStep, "t.id = %s", [-1], "")],
        raw=[("SELECT g AS n, g * 2 AS twice, 'x' AS label FROM generate_series(1, %s) g", [3])],
    )
    assert len(found) == 1 and none == []
    assert numbers == [(1, 2, "x"), (2, 4, "x"), (3, 6, "x")]
