"""The agent loop over REST: claims, leases, tokens, renew, submit, handoff (spec §3.3, §6 rules 2–3)."""

import pytest

from runs.models import Lease, Run
from tests.runs.conftest import age, b64, rid, step_state

ONE_STEP = """---
name: one-step
description: One agent step, then done.
inputs:
  ticket: string
steps:
  - id: work
    agent: Do the work and say what you did.
    output:
      result: string
  - id: done
    finish: completed
---
Body of one-step.
"""

ROUTES = """---
name: routed
description: An agent chooses a route with file and link evidence.
steps:
  - id: screen
    agent: Screen it.
    output:
      cleared: boolean
      score: { type: number, optional: true }
      tags: { type: list, items: { type: string, one_of: [red, green] } }
    evidence: [file, link]
    next:
      - { to: approve, when: Cleared }
      - { to: decline, when: Not cleared }
  - id: approve
    finish: approved
  - id: decline
    finish: declined
---
"""


TWO_STEPS = """---
name: two-steps
description: Two agent steps.
steps:
  - id: first
    agent: First.
  - id: second
    agent: Second.
  - id: done
    finish: ok
---
"""


@pytest.fixture
def one_step(publish):
    return publish(ONE_STEP)


def start(agent, name="one-step", **inputs):
    return agent.write("start_run", process=name, inputs=inputs or {"ticket": "T-1"})


def test_get_work_lists_ready_agent_steps_with_the_exact_claim_call(one_step, agent):
    # spec §3.3, tools.md get_work
    view = start(agent)
    work = agent("get_work")
    [item] = work["items"]
    assert item["runId"] == view["run"]["id"]
    assert item["stepId"] == "work" and item["process"] == "one-step" and item["version"] == 1
    assert item["mode"] == "live" and item["handoff"] is None and item["overdue"] is False
    assert item["claim"] == {
        "tool": "claim",
        "arguments": {"runId": view["run"]["id"], "stepId": "work", "requestId": "<new UUID>"},
    }
    assert work["nextCursor"] is None


def test_get_work_is_oldest_first_and_paged_with_an_opaque_cursor(one_step, agent):
    runs = [start(agent)["run"]["id"] for _ in range(5)]
    first = agent("get_work", limit=2)
    assert [i["runId"] for i in first["items"]] == runs[:2]
    second = agent("get_work", limit=2, cursor=first["nextCursor"])
    assert [i["runId"] for i in second["items"]] == runs[2:4]
    third = agent("get_work", limit=2, cursor=second["nextCursor"])
    assert [i["runId"] for i in third["items"]] == runs[4:] and third["nextCursor"] is None
    agent.fails("get_work", "invalid", cursor="not-a-cursor")


def test_get_work_filters_by_process(one_step, publish, agent):
    publish(ROUTES)
    start(agent)
    agent.write("start_run", process="routed", inputs={})
    assert {i["process"] for i in agent("get_work", process="routed")["items"]} == {"routed"}


def test_claim_returns_token_step_body_data_and_no_handoff(one_step, agent):
    # tools.md claim
    run_id = start(agent)["run"]["id"]
    claimed = agent.write("claim", runId=run_id, stepId="work")
    assert claimed["token"] and claimed["expiresAt"]
    assert claimed["step"] == {
        "id": "work",
        "instructions": "Do the work and say what you did.",
        "output": {"result": "string"},
        "evidence": None,
        "next": None,
    }
    assert claimed["body"] == "Body of one-step.\n"
    assert claimed["data"] == {"inputs": {"ticket": "T-1"}, "steps": {}}
    assert claimed["handoff"] is None and claimed["mode"] == "live"
    assert agent("get_work")["items"] == []


def test_token_is_never_in_get_run_nor_stored(one_step, agent):
    # spec §6 rule 2
    run_id = start(agent)["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    assert token not in str(agent("get_run", runId=run_id))
    assert not Lease.objects.filter(public_id=token).exists()
    from runs.models import IdempotencyRecord

    assert all(token not in str(r.result) for r in IdempotencyRecord.objects.all())


def test_claim_errors(one_step, publish, agent, make_agent):
    # tools.md claim errors
    from tests.runs.conftest import ToolCaller

    run_id = start(agent)["run"]["id"]
    agent.write("claim", runId=run_id, stepId="work")
    mine = agent.fails("claim", "conflict", runId=run_id, stepId="work", requestId=rid())
    assert mine["issues"] == ["claimed_by_you"]
    other = ToolCaller(make_agent("other"))
    theirs = other.fails("claim", "conflict", runId=run_id, stepId="work", requestId=rid())
    assert theirs["issues"] == ["claimed_by_other"]
    agent.fails("claim", "forbidden", runId=run_id, stepId="done", requestId=rid())
    agent.fails("claim", "not_found", runId=run_id, stepId="nope", requestId=rid())
    agent.fails("claim", "not_found", runId="r_999999", stepId="work", requestId=rid())
    agent.fails("claim", "not_found", runId="garbage", stepId="work", requestId=rid())


def test_claim_of_a_step_not_reached_is_not_ready(publish, agent):
    publish(TWO_STEPS)
    run_id = agent.write("start_run", process="two-steps", inputs={})["run"]["id"]
    error = agent.fails("claim", "conflict", runId=run_id, stepId="second", requestId=rid())
    assert error["issues"] == ["not_ready"]


def test_claim_of_a_person_step_is_forbidden(publish, agent, make_person):
    publish("supplier-rfp")
    view = agent.write(
        "start_run",
        process="supplier-rfp",
        inputs={k: "x" for k in ("rfpId", "requirements", "supplierOne", "supplierTwo", "supplierThree")},
    )
    agent.fails("claim", "forbidden", runId=view["run"]["id"], stepId="collect_quotes", requestId=rid())


def test_a_token_that_does_not_verify_is_invalid_on_every_tool(one_step, agent):
    # spec §4.3: a token that does not verify at all is `invalid`
    start(agent)
    for tool, extra in (("submit", {"output": {}, "summary": "s"}), ("renew", {}), ("escalate", {"note": "n"})):
        for token in ("apt1.forged.0000", "apt1.forgé.0000"):  # text HMAC cannot compare is no token either
            error = agent.fails(tool, "invalid", token=token, requestId=rid(), **extra)
            assert error["issues"] == ["token: does not verify"]


def test_lease_expiry_makes_the_step_claimable_and_the_old_token_stale(one_step, agent, make_agent):
    # spec §3.3, §6 rule 2
    from tests.runs.conftest import ToolCaller

    run_id = start(agent)["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    token = agent.write("renew", token=token, progress="Half way: read the ticket.")["token"]
    age(run_id, 601)
    other = ToolCaller(make_agent("second"))
    [item] = other("get_work")["items"]
    assert item["handoff"] == {"progress": "Half way: read the ticket."}
    claimed = other.write("claim", runId=run_id, stepId="work")
    assert claimed["handoff"] == {"progress": "Half way: read the ticket."}
    agent.fails("submit", "stale", token=token, output={"result": "r"}, summary="s", requestId=rid())


def test_renew_gives_a_new_token_and_the_old_one_is_stale_at_once(one_step, agent):
    # tools.md renew
    run_id = start(agent)["run"]["id"]
    first = agent.write("claim", runId=run_id, stepId="work")
    renewed = agent.write("renew", token=first["token"], progress="p1")
    assert renewed["token"] != first["token"] and renewed["expiresAt"] >= first["expiresAt"]
    agent.fails("submit", "stale", token=first["token"], output={"result": "r"}, summary="s", requestId=rid())
    agent.fails("renew", "stale", token=first["token"], requestId=rid())
    view = agent.write("submit", token=renewed["token"], output={"result": "r"}, summary="did it")
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "completed"


def test_renew_after_the_lease_ended_is_stale(one_step, agent):
    run_id = start(agent)["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    age(run_id, 601)
    agent.fails("renew", "stale", token=token, requestId=rid())


def test_replayed_claim_returns_the_original_token_even_after_the_lease_ended(one_step, agent):
    # spec §3.3
    run_id = start(agent)["run"]["id"]
    request_id = rid()
    first = agent("claim", runId=run_id, stepId="work", requestId=request_id)
    age(run_id, 601)
    again = agent("claim", runId=run_id, stepId="work", requestId=request_id)
    assert again == first


def test_submit_records_output_summary_by_and_at_and_finishes(one_step, agent):
    # spec §3.1
    run_id = start(agent)["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    view = agent.write("submit", token=token, output={"result": "fixed"}, summary="Fixed the thing.")
    record = view["data"]["steps"]["work"]
    assert record["output"] == {"result": "fixed"} and record["summary"] == "Fixed the thing."
    assert record["by"] == agent.identity.ref and record["at"] and record["history"] == []
    assert view["run"]["ended"]["by"] == "server" and view["run"]["ended"]["note"] is None
    assert step_state(view, "work") == "done" and step_state(view, "done") == "done"
    assert view["workItems"] == []


def test_refused_submission_lists_every_issue_changes_nothing_and_hands_off(publish, agent, make_agent):
    # spec §6 rule 3, tools.md submit
    from tests.runs.conftest import ToolCaller

    publish(ROUTES)
    run_id = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="screen")["token"]
    error = agent.fails(
        "submit",
        "not_accepted",
        token=token,
        output={"cleared": "yes", "tags": ["red", "blue", 3], "extra": 1},
        evidence=[{"kind": "file", "ref": "f_000"}],
        summary=" ",
        requestId=rid(),
    )
    assert error["issues"] == [
        "summary: missing",
        "output.cleared: expected boolean",
        "output.tags[1]: expected one of red, green",
        "output.tags[2]: expected string",
        "output.extra: not declared",
        "evidence: file required",
        "evidence: link required",
        "evidence f_000: not found",
        "next: required, one of approve, decline",
        "reason: required",
    ]
    view = agent("get_run", runId=run_id)
    assert view["data"]["steps"] == {} and step_state(view, "screen") == "claimed"
    # The claim stands: the same token can submit again.
    upload = agent.write("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"abc"))
    wrong = agent.fails("submit", "not_accepted", token=token, output={"cleared": True, "tags": []},
                        evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "DOC-1"}],
                        summary="s", next="elsewhere", reason="r", requestId=rid())
    assert wrong["issues"] == ["next: 'elsewhere' is not one of approve, decline"]
    age(run_id, 601)
    other = ToolCaller(make_agent("next-one"))
    second = other.write("claim", runId=run_id, stepId="screen")
    assert second["handoff"] == {"issues": wrong["issues"]}
    done = other.write("submit", token=second["token"], output={"cleared": True, "tags": ["green"]},
                       evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "DOC-1"}],
                       summary="s", next="approve", reason="Clean report.")
    assert done["run"]["outcome"] == "approved"
    record = done["data"]["steps"]["screen"]
    assert record["next"] == "approve" and record["reason"] == "Clean report."
    file_item = record["evidence"][0]
    assert file_item["sha256"] == upload["sha256"]
    # A link is absolute, on the host the call came to.
    assert file_item["url"].startswith(f"http://testserver/files/{upload['id']}?e=")
    assert record["evidence"][1] == {"kind": "link", "ref": "DOC-1"}


def test_next_and_reason_on_a_single_next_step_are_not_accepted(one_step, agent):
    # spec §3.2
    run_id = start(agent)["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    error = agent.fails("submit", "not_accepted", token=token, output={"result": "r"}, summary="s",
                        next="done", reason="because", requestId=rid())
    assert error["issues"] == [
        "next: not allowed, this step has a single next",
        "reason: not allowed, this step has a single next",
    ]


def test_file_evidence_is_verified_by_hashing_the_stored_bytes(publish, agent):
    # spec §5
    from runs.models import Upload

    publish(ROUTES)
    run_id = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.write("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"original"))
    Upload.objects.filter(public_id=upload["id"]).update(content=b"tampered")
    error = agent.fails("submit", "not_accepted", token=token, output={"cleared": True, "tags": []},
                        evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "L"}],
                        summary="s", next="approve", reason="r", requestId=rid())
    assert f"evidence {upload['id']}: stored bytes no longer match the hash recorded at upload" in error["issues"]


def test_file_links_serve_the_bytes_as_an_attachment_only_with_a_valid_signature(publish, agent, client):
    publish(ROUTES)
    run_id = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.write("upload", fileName="r.html", contentType="text/html",
                         contentBase64=b64(b"<script>alert(1)</script>"))
    view = agent.write("submit", token=token, output={"cleared": True, "tags": []},
                       evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "L"}],
                       summary="s", next="approve", reason="r")
    url = view["data"]["steps"]["screen"]["evidence"][0]["url"]
    path = url[url.index("/files/"):]
    response = client.get(path)
    assert response.status_code == 200 and response.content == b"<script>alert(1)</script>"
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert client.get(path.replace("s=", "s=0")).status_code == 404
    assert client.get(path.split("?")[0]).status_code == 404


def test_file_links_take_the_public_url_where_one_is_set(publish, agent, settings):
    # Behind a proxy the request's own host is not the one callers reach.
    settings.PUBLIC_URL = "https://process.example.org"
    publish(ROUTES)
    run_id = agent.write("start_run", process="routed", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.write("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"abc"))
    view = agent.write("submit", token=token, output={"cleared": True, "tags": []},
                       evidence=[{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "L"}],
                       summary="s", next="approve", reason="r")
    url = view["data"]["steps"]["screen"]["evidence"][0]["url"]
    assert url.startswith(f"https://process.example.org/files/{upload['id']}?e=")


def test_upload_limits_and_bad_base64(agent, settings):
    settings.MAX_UPLOAD_BYTES = 10
    agent.fails("upload", "invalid", fileName="a", contentType="t", contentBase64="!!!!", requestId=rid())
    error = agent.fails("upload", "invalid", fileName="a", contentType="t", contentBase64=b64(b"x" * 11),
                        requestId=rid())
    assert error["issues"] == ["contentBase64: over 10 bytes"]
    # The size is worked out before decoding, exactly, whatever the padding (==, = or none).
    for size in range(7, 14):
        if size <= 10:
            assert agent.write("upload", fileName="a", contentType="t", contentBase64=b64(b"x" * size))["bytes"] == size
        else:
            agent.fails("upload", "invalid", fileName="a", contentType="t", contentBase64=b64(b"x" * size),
                        requestId=rid())


def test_test_mode_is_shown_in_get_work_and_claim(one_step, agent):
    # spec §3.3 test runs
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"}, mode="test")["run"]["id"]
    [item] = agent("get_work")["items"]
    assert item["mode"] == "test"
    assert agent.write("claim", runId=run_id, stepId="work")["mode"] == "test"


def test_agent_step_due_marks_overdue_in_the_run_view_and_get_work(publish, agent):
    # spec §2.2 due
    publish("""---
name: due-agent
description: An agent step with a deadline.
steps:
  - id: work
    agent: Work.
    due: 1h
  - id: done
    finish: ok
---
""")
    run_id = agent.write("start_run", process="due-agent", inputs={})["run"]["id"]
    view = agent("get_run", runId=run_id)
    assert view["steps"][0]["overdue"] is False and view["steps"][0]["due"]
    age(run_id, 3601)
    assert agent("get_run", runId=run_id)["steps"][0]["overdue"] is True
    assert agent("get_work")["items"][0]["overdue"] is True


def test_values_with_quotes_percent_signs_and_semicolons_are_stored_as_sent(publish, agent):
    # A write's statements go to PostgreSQL together with their values bound on the client: the
    # values must come back exactly, never read as SQL or as placeholders.
    publish(ONE_STEP)
    tricky = "100% done; it's \"quoted\" %s %(x)s \\ ; DROP TABLE runs_run; --"
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": tricky})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    agent.write("submit", token=token, output={"result": tricky}, summary=tricky)
    assert agent("get_run", runId=run_id)["run"]["state"] == "ended"
    [run] = Run.objects.all()
    assert run.data["inputs"]["ticket"] == tricky
    assert run.data["steps"]["work"]["output"]["result"] == tricky, run.data
