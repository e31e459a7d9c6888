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


def test_another_organization_can_neither_decide_cancel_renew_nor_escalate(publish, agent, other_org, make_agent,
                                                                           person_caller):
    # Every tool, not only the reads: a run of one organization does not exist for another (spec §6).
    from tests.runs.test_decisions import REVIEW

    publish(REVIEW)
    owner = person_caller("owner@example.com")
    run_id = agent.write("start_run", process="review", inputs={"owner": "owner@example.com"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    outsider = ToolCaller(make_agent("outsider", organization=other_org))
    outsider.fails("renew", "invalid", token=token, progress="p", requestId=rid())
    outsider.fails("escalate", "invalid", token=token, note="n", requestId=rid())
    [item] = agent.write("submit", token=token, output={"text": "v1"}, summary="Drafted.")["workItems"]
    # An operator of the other organization, in a group named like the process's role.
    foreign = person_caller("foreign@other.example", operator=True, organization=other_org, groups=["approvers"])
    foreign.fails("decide", "not_found", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                  decision="completed", output={"text": "x"}, next="approve_it", reason="r", requestId=rid())
    foreign.fails("cancel", "not_found", runId=run_id, reason="Mine now.", requestId=rid())
    assert foreign("get_work")["items"] == []
    # Nothing the outsiders tried left a mark: the item is still open to its owner, the run still running.
    view = owner("get_run", runId=run_id)
    assert view["run"]["state"] == "waiting" and [w["id"] for w in view["workItems"]] == [item["id"]]
    assert owner("get_work")["items"][0]["workItem"]["id"] == item["id"]
