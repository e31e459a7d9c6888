"""Hostile sizes and shapes are refused quickly, with a clear error and bounded memory (issue: hostile input)."""

import json
import time
import tracemalloc

import pytest

from processes.parsing import parse_process
from tests.runs.conftest import rid
from tests.runs.test_agent_loop import ONE_STEP


def timed(call):
    """Return the call's result, the CPU seconds it took and its peak memory.

    CPU time, not the clock: a refusal that walks a bomb costs CPU wherever it runs, while the clock
    also counts whatever else a busy machine is doing.
    """
    tracemalloc.start()
    started = time.process_time()
    try:
        result = call()
    finally:
        elapsed = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return result, elapsed, peak


def test_a_20_mb_body_is_refused_before_it_is_read(agent):
    body = b'{"fileName": "a", "contentType": "t", "requestId": "r", "contentBase64": "' + b"A" * (20 * 2**20) + b'"}'
    response, elapsed, peak = timed(
        lambda: agent.client.post("/api/tools/upload", body, content_type="application/json")
    )
    assert elapsed < 5
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "invalid"
    assert "larger than this server accepts" in response.json()["error"]["message"]
    assert peak < 2 * len(body)  # the test client's own copy; the server made none


def test_the_parser_refuses_a_declared_oversize_body_without_reading_it(settings):
    from rest_framework.test import APIRequestFactory

    from api.parsers import StrictJSONParser
    from runs.errors import TooLarge

    class Unreadable:
        def read(self, *args):
            raise AssertionError("the body was read")

    request = APIRequestFactory().post("/api/tools/upload", b"{}", content_type="application/json")
    request.META["CONTENT_LENGTH"] = str(20 * 2**20)
    with pytest.raises(TooLarge, match="larger than this server accepts"):
        StrictJSONParser().parse(Unreadable(), parser_context={"request": request})


def test_a_deeply_nested_output_is_refused(publish, agent):
    publish(ONE_STEP)
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    for depth, message in ((5000, "not valid JSON"), (100, "deeper than 64")):
        nested = "[" * depth + "]" * depth
        body = json.dumps({"token": token, "summary": "s", "requestId": rid(), "output": {"result": "x"}})
        body = body[:-1] + f', "extra": {nested}' + "}"
        response, elapsed, peak = timed(
            lambda body=body: agent.client.post("/api/tools/submit", body, content_type="application/json"))
        assert response.status_code == 400 and message in response.json()["error"]["message"]
        assert elapsed < 1 and peak < 8 * 2**20
    moderately = {"result": "x", "deep": json.loads("[" * 60 + "]" * 60)}
    error = agent.fails("submit", "not_accepted", token=token, output=moderately, summary="s", requestId=rid())
    assert error["issues"] == ["output.deep: not declared"]


def test_a_10_mb_frontmatter_is_refused_quickly():
    text = "---\nname: big\ndescription: " + "x" * (10 * 2**20) + "\nsteps: []\n---\n"
    result, elapsed, peak = timed(lambda: parse_process(text))
    assert result.frontmatter is None and result.issues
    assert elapsed < 2 and peak < 40 * 2**20


def test_a_yaml_alias_bomb_is_refused_quickly():
    lines = ["---", "a: &a [x, x, x, x, x, x, x, x, x]"]
    for index in range(1, 12):
        previous = "a" if index == 1 else f"b{index - 1}"
        lines.append(f"b{index}: &b{index} [{', '.join([f'*{previous}'] * 9)}]")
    text = "\n".join(lines) + "\n---\n"
    result, elapsed, peak = timed(lambda: parse_process(text))
    assert result.frontmatter is None and any("alias" in issue or "anchor" in issue for issue in result.issues)
    assert elapsed < 1 and peak < 8 * 2**20  # expanded: 9**12 scalars

def test_a_hundred_thousand_steps_are_refused_quickly():
    steps = "".join(f"  - id: s{i}\n    agent: Do {i}.\n" for i in range(100_000))
    text = f"---\nname: huge\ndescription: d\nsteps:\n{steps}---\n"
    result, elapsed, peak = timed(lambda: parse_process(text))
    assert result.frontmatter is None and result.issues
    assert elapsed < 2 and peak < 64 * 2**20


@pytest.mark.parametrize("size", [10 * 2**20 + 1])
def test_a_huge_base64_upload_is_refused_without_decoding(agent, size, monkeypatch):
    import base64

    def never(*args, **kwargs):
        raise AssertionError("an oversize upload was decoded")

    encoded = base64.b64encode(b"\0" * size).decode()
    monkeypatch.setattr("runs.tools.base64.b64decode", never)
    (status, body), elapsed, peak = timed(lambda: agent.raw("upload", fileName="a", contentType="t",
                                                            contentBase64=encoded, requestId=rid()))
    assert status == 400 and body["error"]["issues"] == [f"contentBase64: over {10 * 2**20} bytes"]
    # The test client's JSON and request copies and the server's body and parsed string: no more.
    assert elapsed < 5 and peak < 6 * len(encoded)


def test_a_request_id_of_ten_kilobytes_is_refused(agent):
    error, elapsed, peak = timed(
        lambda: agent.fails("start_run", "invalid", process="p", inputs={}, requestId="r" * 10240))
    assert any(issue.startswith("requestId:") for issue in error["issues"])
    assert elapsed < 1 and peak < 4 * 2**20


def test_nul_characters_are_refused_on_every_database(publish, agent):
    # PostgreSQL stores no NUL in text or jsonb; refused as `invalid` naming each place, never a 500.
    publish(ONE_STEP)
    error = agent.fails("start_run", "invalid", process="one\x00step", inputs={"ticket": "a\x00b", "k\x00": 1},
                        requestId=rid())
    assert error["issues"] == [
        "inputs.k\\u0000: text may not contain NUL (\\u0000) characters",
        "inputs.ticket: text may not contain NUL (\\u0000) characters",
        "process: text may not contain NUL (\\u0000) characters",
    ]
    agent.fails("get_run", "not_found", runId="r_" + "9" * 30)
