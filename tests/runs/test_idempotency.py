"""Every write is idempotent on requestId (spec §4, implementing.md Step 7)."""

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
