"""Nothing of one organization is visible to another (issue: not_found everywhere)."""

from tests.runs.conftest import ToolCaller, b64, rid
from tests.runs.test_agent_loop import ONE_STEP, ROUTES


def test_another_organizations_run_process_and_upload_are_not_found(publish, agent, other_org, make_agent):
    publish(ONE_STEP)
    publish(ROUTES)
    outsider = ToolCaller(make_agent("outsider", organization=other_org))
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    upload = agent.write("upload", fileName="a", contentType="t", contentBase64=b64(b"abc"))
    outsider.fails("get_run", "not_found", runId=run_id)
    outsider.fails("claim", "not_found", runId=run_id, stepId="work", requestId=rid())
    outsider.fails("send_event", "not_found", runId=run_id, name="x", requestId=rid())
    outsider.fails("start_run", "not_found", process="one-step", inputs={"ticket": "T"}, requestId=rid())
    assert outsider("get_work")["items"] == [] and outsider("list_runs")["items"] == []
    assert outsider("list_processes")["items"] == []
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    outsider.fails("submit", "invalid", token=token, output={"result": "r"}, summary="s", requestId=rid())
    # A file of another organization is not evidence here.
    run2 = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    other_upload = outsider.write("upload", fileName="b", contentType="t", contentBase64=b64(b"zz"))
    token2 = agent.write("claim", runId=run2, stepId="screen")["token"]
    error = agent.fails("submit", "not_accepted", token=token2, output={"cleared": True, "tags": []},
                        evidence=[{"kind": "file", "ref": other_upload["id"]}, {"kind": "link", "ref": "x"},
                                  {"kind": "file", "ref": upload["id"]}],
                        summary="s", next="approve", reason="r", requestId=rid())
    assert error["issues"] == [f"evidence {other_upload['id']}: not found"]


def test_unknown_tool_and_unauthenticated_calls(client, agent):
    from rest_framework.test import APIClient

    response = APIClient().post("/api/tools/describe", {}, format="json")
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["ok"] is False
    status, body = agent.raw("no_such_tool")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_malformed_bodies_are_invalid_never_500(agent):
    for payload in (b"{", b"[1,2]", b'{"a": NaN}', b"\xff\xfe", b"[" * 100000 + b"]" * 100000):
        response = agent.client.post("/api/tools/start_run", payload, content_type="application/json")
        assert response.status_code == 400, payload[:10]
        assert response.json()["error"]["code"] == "invalid"
