"""Each of the ten core conformance fixtures runs to a finish: agents over REST, people deciding."""

import pytest

from processes.definition import definition_for
from processes.demo import CORE_FIXTURES
from tests.runs.conftest import ToolCaller, age, b64

PERSON = "pat@example.com"
SAMPLES = {
    "string": "text",
    "number": 1250.5,
    "boolean": True,
    "date": "2026-03-01",
    "datetime": "2026-01-01T09:00:00Z",
    "list": [],
    "object": {"note": "n"},
    "person": PERSON,
}


def sample(spec):
    spec = {"type": spec} if isinstance(spec, str) else spec
    if spec.get("one_of"):
        return spec["one_of"][0]
    if spec["type"] == "list" and spec.get("items"):
        return [sample(spec["items"])]
    return SAMPLES[spec["type"]]


def fill(output: dict | None) -> dict:
    return {name: sample(spec) for name, spec in (output or {}).items()}


def evidence_for(caller, kinds) -> list:
    items = []
    for kind in kinds or ():
        if kind == "file":
            upload = caller.write("upload", fileName="e.txt", contentType="text/plain", contentBase64=b64(b"evidence"))
            items.append({"kind": "file", "ref": upload["id"]})
        else:
            items.append({"kind": "link", "ref": "https://example.com/record/1"})
    return items


def route(requirements) -> dict:
    if not requirements["next"]:
        return {}
    return {"next": requirements["next"][0]["to"], "reason": "The first route fits."}


def drive(version, agent: ToolCaller, person: ToolCaller, run_id: str) -> dict:
    definition = definition_for(version)
    for _ in range(60):
        view = person("get_run", runId=run_id)
        if view["run"]["state"] in ("ended", "cancelled"):
            return view
        progressed = False
        for entry in agent("get_work")["items"]:
            if entry["runId"] != run_id:
                continue
            claimed = agent.write("claim", **{k: v for k, v in entry["claim"]["arguments"].items() if k != "requestId"})
            step = claimed["step"]
            agent.write("submit", token=claimed["token"], output=fill(step["output"]),
                        evidence=evidence_for(agent, step["evidence"]), summary="Done as instructed.", **route(step))
            progressed = True
        for entry in person("get_work")["items"]:
            if entry["runId"] != run_id:
                continue
            item = entry["workItem"]
            arguments = {"runId": run_id, "workItemId": item["id"], "snapshot": item["snapshot"]}
            if item["kind"] == "approve":
                person.write("decide", decision="approved", **arguments)
            else:
                person.write("decide", decision="completed", output=fill(item["output"]),
                             evidence=evidence_for(person, item["evidence"]), **route(item), **arguments)
            progressed = True
            break  # the run data changed: read again for a current snapshot
        if not progressed:
            waiting = [s["id"] for s in view["steps"] if s["state"] == "waiting"]
            for step_id in waiting:
                if definition[step_id].kind == "wait_for":
                    agent.write("send_event", runId=run_id, name=definition[step_id].value, data={"ok": True})
                    progressed = True
            if not progressed:
                age(run_id, 40 * 86400)
    raise AssertionError(f"run {run_id} did not finish: {view['steps']}")


@pytest.mark.parametrize("name", CORE_FIXTURES)
def test_core_fixture_runs_to_a_finish(name, publish, agent, person_caller):
    version = publish(name)
    groups = [role for role in {s.get("person") for s in version.frontmatter["steps"]} if role and "." not in role
              and role != "initiator"]
    person = person_caller(PERSON, groups=groups)
    inputs = fill(version.frontmatter.get("inputs"))
    starter = person if definition_for(version).uses_initiator() else agent
    view = starter.write("start_run", process=name, inputs=inputs)
    final = drive(version, agent, person, view["run"]["id"])
    finishes = {s.value for s in definition_for(version).steps if s.kind == "finish"}
    assert final["run"]["state"] == "ended" and final["run"]["outcome"] in finishes, final["run"]
    assert all(s["state"] in ("done", None) for s in final["steps"]), final["steps"]
