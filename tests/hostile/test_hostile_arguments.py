"""Hostile text and numbers in every argument of every tool, over REST and MCP: never a 500 (spec §4.3, §6 rule 3).

Each example takes a call that works, puts one hostile value (or name) somewhere in its arguments, and
sends it through both doors. The answer is always the tools.md envelope: ok, or a 4xx error whose code
matches its status, within the official schemas.
"""

import json
import os
import uuid

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.oauth import create_agent
from processes.capabilities import TOOLS
from tests.mcp import APPROVAL, McpClient, client_credentials_token
from tests.runs.conftest import HTTP_STATUS, assert_valid, b64
from tests.runs.test_agent_loop import ONE_STEP

# Per tool and door; HOSTILE_EXAMPLES=1000 searches further by hand.
EXAMPLES_PER_TOOL = int(os.environ.get("HOSTILE_EXAMPLES", "60"))

HOSTILE_TEXT = st.sampled_from([
    "\ud800", "a\udfffb", "\udbff\udc00"[::-1],  # lone surrogates, and a pair in the wrong order
    "\x00", "a\x00b", "\x01\x02\x1f", "\x7f", "\x80\x9f", "\u0085",  # NUL, C0, DEL, C1
    "\u2028", "line\u2029break", "\r\nX-Evil: 1", "\t",
    "\u202ereversed", "\u2066isolate\u2069", "\ufeff", "\uffff", "\U0010ffff",
    "", " ", "x" * 10240, "é" * 5000, "../../etc/passwd", "<script>alert(1)</script>", "%00", "\\u0000",
    "r_1\x00", "w_1\ud800", "r_99999999999999999", "apt1.x.y",
])
HOSTILE_NUMBERS = st.sampled_from([
    2**31 - 1, 2**31, 2**32, 2**53 - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, 10**300,
    -1, -(2**31), -(2**63), -(10**300), 0, 1e308, -1e308, 5e-324, 1.5,
])
HOSTILE_VALUES = HOSTILE_TEXT | HOSTILE_NUMBERS | st.sampled_from([None, True, [], {}, [None], {"": None}])


def rid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def world(org, publish, make_person):
    """A published process, a run with a claimed step and one awaiting a person, and an agent's token."""
    publish(ONE_STEP)
    publish(APPROVAL)
    make_person("fin@example.com", groups=["finance"])
    _, client_id, secret = create_agent(organization=org, name="fuzzer")
    token = client_credentials_token(Client(), client_id, secret)
    rest = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def call(tool, **arguments):
        body = rest.post(f"/api/tools/{tool}", json.dumps(arguments), content_type="application/json").json()
        assert body["ok"], body
        return body["data"]

    run_id = call("start_run", process="one-step", inputs={"ticket": "T"}, requestId=rid())["run"]["id"]
    lease = call("claim", runId=run_id, stepId="work", requestId=rid())["token"]
    approval = call("start_run", process="approval", inputs={"topic": "t"}, requestId=rid())["run"]["id"]
    draft = call("claim", runId=approval, stepId="draft", requestId=rid())["token"]
    [item] = call("submit", token=draft, output={"text": "x"}, summary="s", requestId=rid())["workItems"]
    upload = call("upload", fileName="a.txt", contentType="text/plain", contentBase64=b64(b"x"), requestId=rid())
    bases = {
        "describe": {},
        "list_processes": {"cursor": None},
        "start_run": {"process": "one-step", "version": 1, "inputs": {"ticket": "T"}, "mode": "test"},
        "get_run": {"runId": run_id},
        "get_work": {"process": "one-step", "limit": 5},
        "claim": {"runId": run_id, "stepId": "work"},
        "renew": {"token": lease, "progress": "halfway"},
        "upload": {"fileName": "a.txt", "contentType": "text/plain", "contentBase64": b64(b"hello")},
        "submit": {"token": lease, "output": {"result": "done"}, "summary": "Did it.",
                   "evidence": [{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": "https://x"}]},
        "escalate": {"token": lease, "note": "Please look."},
        "decide": {"runId": approval, "workItemId": item["id"], "snapshot": item["snapshot"],
                   "decision": "approved", "note": "ok"},
        "cancel": {"runId": run_id, "reason": "Duplicate."},
        "send_event": {"runId": run_id, "name": "paid", "data": {"amount": 3}},
        "list_runs": {"process": "one-step", "state": "running", "inputs": {"ticket": "T"}, "limit": 5},
    }
    return {"token": token, "bases": bases}


def places(value, path=()):
    """Every path to a value inside arguments, and to a new name beside the existing ones."""
    found = [path] if path else []
    if isinstance(value, dict):
        found.append((*path, None))  # a new key here
        for key, child in value.items():
            found.extend(places(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(places(child, (*path, index)))
    return found


def put(arguments, path, value, name):
    """Return arguments with `value` at path; a None last step adds the hostile `name` as a key."""
    arguments = json.loads(json.dumps(arguments))
    *parents, last = path
    target = arguments
    for step in parents:
        target = target[step]
    if last is None:
        target[name] = value
    else:
        target[last] = value
    return arguments


@st.composite
def hostile_calls(draw, base: dict, writes: bool):
    arguments = dict(base)
    if writes:
        arguments["requestId"] = rid()
    path = draw(st.sampled_from(places(arguments)))
    value = draw(HOSTILE_VALUES)
    name = draw(HOSTILE_TEXT)
    return put(arguments, path, value, name)


def check_envelope(tool: str, status: int, envelope: dict) -> None:
    assert status < 500, (status, envelope)
    if envelope["ok"]:
        assert status == 200
        assert_valid(f"{tool}.result", envelope["data"])
    else:
        assert_valid("tool-error", envelope["error"])
        expected = HTTP_STATUS[envelope["error"]["code"]]
        assert status in (expected, 413), (status, envelope["error"])


@pytest.mark.parametrize("tool", TOOLS)
def test_hostile_arguments_are_answered_with_the_envelope_on_both_doors(world, tool):
    from runs.arguments import WRITE_TOOLS

    rest = Client(HTTP_AUTHORIZATION=f"Bearer {world['token']}")
    mcp = McpClient(Client(), world["token"])
    answered = {"ok": 0, "refused": 0}

    @settings(max_examples=EXAMPLES_PER_TOOL, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hostile_calls(world["bases"][tool], tool in WRITE_TOOLS))
    def hostile(arguments):
        body = json.dumps(arguments)  # a lone surrogate travels as its \\u escape, as any client would send it
        response = rest.post(f"/api/tools/{tool}", body, content_type="application/json")
        check_envelope(tool, response.status_code, response.json())
        answer = mcp.post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                      "params": {"name": tool, "arguments": arguments}}))
        assert answer.status_code == 200, answer.content
        result = answer.json()["result"]
        envelope = result["structuredContent"]
        check_envelope(tool, HTTP_STATUS[envelope["error"]["code"]] if not envelope["ok"] else 200, envelope)
        assert result["isError"] is (not envelope["ok"])
        answered["ok" if envelope["ok"] else "refused"] += 1

    hostile()
    # Every example reached both doors, and most of them were refused.
    assert sum(answered.values()) >= EXAMPLES_PER_TOOL and answered["refused"] > answered["ok"], answered
