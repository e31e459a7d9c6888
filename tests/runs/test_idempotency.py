"""Every write is idempotent on requestId (spec §4, implementing.md Step 7)."""

import psycopg
import pytest
from django.db import connection

from runs.models import IdempotencyRecord, Run, Upload
from tests.runs.conftest import ToolCaller, b64, rid
from tests.runs.test_agent_loop import ONE_STEP


def test_the_same_call_again_returns_the_original_result_and_changes_nothing(publish, agent):
    publish(ONE_STEP)
    request_id = rid()
    first = agent("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    again = agent("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    assert again == first and Run.objects.count() == 1
    token = agent.write("claim", runId=first["run"]["id"], stepId="work")["token"]
    submit_id = rid()
    done = agent("submit", token=token, output={"result": "r"}, summary="s", requestId=submit_id)
    assert agent("submit", token=token, output={"result": "r"}, summary="s", requestId=submit_id) == done


def test_the_same_request_id_with_other_arguments_is_a_conflict(publish, agent):
    publish(ONE_STEP)
    request_id = rid()
    agent("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    error = agent.fails("start_run", "conflict", process="one-step", inputs={"ticket": "other"}, requestId=request_id)
    assert error["issues"] == ["request_id_reused"]
    error = agent.fails("upload", "conflict", fileName="a", contentType="t", contentBase64=b64(b"x"),
                        requestId=request_id)
    assert Run.objects.count() == 1


def test_a_failed_call_is_not_recorded_so_a_retry_can_succeed(publish, agent):
    publish(ONE_STEP)
    request_id = rid()
    agent.fails("start_run", "invalid", process="one-step", inputs={}, requestId=request_id)
    assert not IdempotencyRecord.objects.filter(request_id=request_id).exists()
    view = agent("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    assert view["run"]["state"] == "active"


def test_request_ids_are_scoped_to_the_organization(publish, agent, other_org, make_agent):
    publish(ONE_STEP)
    publish(ONE_STEP, organization=other_org)
    outsider = ToolCaller(make_agent("outsider", organization=other_org))
    request_id = rid()
    mine = agent("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    theirs = outsider("start_run", process="one-step", inputs={"ticket": "T"}, requestId=request_id)
    assert mine["run"]["id"] != theirs["run"]["id"]


def test_replayed_upload_stores_one_file(agent):
    request_id = rid()
    first = agent("upload", fileName="a", contentType="t", contentBase64=b64(b"abc"), requestId=request_id)
    assert agent("upload", fileName="a", contentType="t", contentBase64=b64(b"abc"), requestId=request_id) == first
    assert Upload.objects.count() == 1


def test_a_request_id_of_ten_kilobytes_is_refused_quickly(agent):
    error = agent.fails("describe", "invalid", requestId="x")  # describe takes no arguments at all
    assert error["issues"] == ["requestId: not an argument of describe"]
    error = agent.fails("upload", "invalid", fileName="a", contentType="t", contentBase64="eA==", requestId="r" * 10240)
    assert error["issues"][0].startswith("requestId:")


@pytest.mark.django_db(transaction=True)
def test_a_write_commits_in_its_own_batch_and_another_connection_sees_it(publish, agent):
    # spec §4: an acknowledged write is durable. Its record goes with its last statements, and the
    # answer comes only after Django's atomic block has committed them.
    publish(ONE_STEP)
    sent = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"}, requestId="commit-1")["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work", requestId="commit-2")["token"]
    agent.write("submit", token=token, output={"result": "r"}, summary="s", requestId="commit-3")
    if connection.vendor != "postgresql":
        assert IdempotencyRecord.objects.count() == 3
        return
    assert 'INSERT INTO "runs_idempotencyrecord"' in sent[-1], sent  # the record goes with the write's last statements
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    settings = connection.settings_dict
    with psycopg.connect(dbname=settings["NAME"], user=settings["USER"] or None, host=settings["HOST"] or None,
                         port=settings["PORT"] or None) as other:
        tools = [tool for (tool,) in other.execute(
            "SELECT tool FROM runs_idempotencyrecord WHERE request_id LIKE 'commit-%%' ORDER BY request_id"
        )]
        state = other.execute("SELECT state FROM runs_run").fetchone()[0]
    assert tools == ["start_run", "claim", "submit"]
    assert state == "ended"
    # The replay still answers from the record.
    assert agent.write("claim", runId=run_id, stepId="work", requestId="commit-2")["token"] == token
