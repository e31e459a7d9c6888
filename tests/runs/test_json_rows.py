"""Several SELECTs read as one prepared statement of JSON (base.json_rows) build the very instances the
rows themselves would: every field's value and type, for every model of the project it may read."""

import datetime as dt
import math

import pytest
from django.apps import apps
from django.db import connection

from base import json_rows, sending, sql
from runs.models import Passage, Run, RunStep, Upload
from tests.runs.conftest import b64, fields_of, rid

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


def _every_row_read_both_ways(model) -> tuple[list, list]:
    # One query alone goes by Django's cursor and converters; with a second beside it, as JSON.
    alone = sql.select(model, "1 = 1", [])
    read = []
    values = json_rows.values
    json_rows.values = lambda model, found: read.append(model) or values(model, found)
    try:
        as_json, _other = sql.select_many([(model, "1 = 1", [], ""), (Run, "1 = 0", [], "")])
    finally:
        json_rows.values = values
    assert read == [model, Run], "the two queries did not go as one statement of JSON"
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
    # Float columns holding what JSON spells otherwise or not at all: an integral value, a negative zero.
    first, second = Passage.objects.order_by("pk").values_list("pk", flat=True)[:2]
    Passage.objects.filter(pk=first).update(seconds=3.0)
    Passage.objects.filter(pk=second).update(seconds=-0.0)
    assert sending.utc_session(), "the test database's session keeps time in UTC, as production's does"
    return run_id


def test_every_model_json_serves_builds_as_its_rows_do(every_kind_of_row):
    served = [model for model in apps.get_models() if json_rows.serves([(model, "", [], "")])]
    assert {Run, RunStep, Passage} <= set(served)
    compared = 0
    for model in served:
        alone, as_json = _every_row_read_both_ways(model)
        assert [fields_of(obj) for obj in as_json] == [fields_of(obj) for obj in alone], model._meta.label
        assert all(obj._state.adding is False and obj._state.db == "default" for obj in as_json)
        compared += len(alone)
    assert compared > 20
    passages, _none = sql.select_many([(Passage, "1 = 1", [], ""), (Run, "1 = 0", [], "")])
    [three] = [p for p in passages if p.seconds == 3.0]
    [zero] = [p for p in passages if p.seconds == 0]
    assert type(three.seconds) is float and math.copysign(1, zero.seconds) == -1
    [run] = _every_row_read_both_ways(Run)[1]
    assert run.data["inputs"]["tag"] == "é ☃ 𝄞"
    assert isinstance(run.started_at, dt.datetime) and run.started_at.utcoffset() == dt.timedelta(0)


def test_a_batch_json_cannot_spell_goes_as_rows(every_kind_of_row):
    # An uploaded file's bytes have no JSON form; rows in an order of their own must keep it.
    assert not json_rows.serves([(Upload, "", [], "")])
    assert not json_rows.serves([(RunStep, "", [], "ORDER BY t.position DESC")])
    # One statement reads with one snapshot, taken before a lock's wait: a locked read goes by the batch,
    # whose next statements see what the lock's holder committed.
    for lock in ("FOR UPDATE", "for no key update", "FOR SHARE", "FOR KEY SHARE"):
        assert not json_rows.serves([(Run, "", [], lock)])
    [uploads, steps] = sql.select_many([(Upload, "1 = 1", [], ""), (RunStep, "1 = 1", [], "ORDER BY t.position DESC")])
    assert bytes(uploads[0].content) == b"abc"
    assert [step.position for step in steps] == sorted((step.position for step in steps), reverse=True)


def test_raw_selects_registered_as_integers_come_back_as_tuples_and_empty_reads_as_nothing(every_kind_of_row):
    counted = json_rows.integer_rows("SELECT g FROM generate_series(1, %s) g")
    assert json_rows.serves([(Run, "", [], "")], [(counted, [3])])
    found, none, numbers = sql.select_many([(Run, "1 = 1", [], ""), (RunStep, "t.id = %s", [-1], "")], raw=[(counted, [3])])
    assert len(found) == 1 and none == []
    assert numbers == [(1,), (2,), (3,)]
    # Any other raw SELECT could give what JSON does not spell, or two columns of one name: by the batch.
    other = "SELECT 1.50::numeric, 2, 2"
    assert not json_rows.serves([(Run, "", [], "")], [(other, [])])
    _found, [(numeric, two, again)] = sql.select_many([(Run, "1 = 1", [], "")], raw=[(other, [])])
    assert str(numeric) == "1.50" and (two, again) == (2, 2)
