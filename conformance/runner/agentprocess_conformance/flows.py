"""Moves the scenarios repeat: starting runs, filling outputs, claiming, submitting, deciding."""

from __future__ import annotations

import base64
import datetime as dt
import email.utils
import hashlib
import json
import re
import time

from .calls import Caller, Nonconformance
from .exchanges import LOG
from .framework import Skip

LINK = "https://records.example/conformance/1"
SUMMARY = "Did what the step asks and checked the result; nothing left undone."
SAMPLES = {
    "string": "conformance",
    "number": 1250.5,
    "boolean": True,
    "date": "2026-03-02",
    "datetime": "2026-01-01T09:00:00Z",
    "list": [],
    "object": {"note": "conformance"},
}
POLL_SECONDS = 0.25
# An IMF-fixdate (RFC 9110 §5.6.7), the form of the Date header.
HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")
# How far an expiresAt may be from now plus the lease: the Date header and many timestamps are to the second.
EXPIRY_TOLERANCE_SECONDS = 2.0


def sample(spec, person: str):
    """A value of the declared field type (the first `one_of` value when there is a choice)."""
    spec = {"type": spec} if isinstance(spec, str) else spec
    if spec.get("one_of"):
        return spec["one_of"][0]
    if spec["type"] == "person":
        return person
    if spec["type"] == "list" and spec.get("items"):
        return [sample(spec["items"], person)]
    return SAMPLES[spec["type"]]


def fill(fields: dict | None, person: str, **values) -> dict:
    """An output or inputs object with every declared field filled, values overriding."""
    filled = {name: sample(spec, person) for name, spec in (fields or {}).items()}
    filled.update(values)
    return filled


def upload(caller: Caller, content: bytes = b"conformance evidence\n", name: str = "evidence.txt") -> dict:
    return caller.write("upload", fileName=name, contentType="text/plain",
                        contentBase64=base64.b64encode(content).decode())


def evidence_for(caller: Caller, kinds) -> list[dict]:
    items = []
    for kind in kinds or ():
        if kind == "file":
            items.append({"kind": "file", "ref": upload(caller)["id"]})
        else:
            items.append({"kind": "link", "ref": LINK})
    return items


def route(requirements: dict, to: str | None = None) -> dict:
    """`next` and `reason` when the step offers a list of routes: `to`, or the first route."""
    routes = requirements.get("next")
    if not routes:
        return {}
    return {"next": to or routes[0]["to"], "reason": "That route fits what was found."}


def now_plus(seconds: float) -> str:
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def server_now() -> dt.datetime | None:
    """The server's clock at its last answer: the HTTP Date header (RFC 9110 §6.6.1), to the second.

    A proxy may add its own Date beside the server's; the first is taken. None when there is none.
    """
    last = LOG.last()
    found = HTTP_DATE.search(last.date or "") if last is not None else None
    if found is None:
        return None
    try:
        return email.utils.parsedate_to_datetime(found.group(0))
    except (TypeError, ValueError, IndexError):
        return None


def lease_problem(expires_at: str, lease_seconds: float, served: dt.datetime | None) -> str | None:
    """Say how an expiresAt is not the server's now plus the lease (spec §3.3), or None when it is.

    The Date header is written when the answer leaves, which a busy server may do late: the expiry may be
    up to half the lease short of it, never more than the tolerance beyond it.
    """
    if served is None or not lease_seconds:
        return None
    ahead = (parse_time(expires_at) - served).total_seconds()
    short = max(EXPIRY_TOLERANCE_SECONDS, lease_seconds / 2)
    if not lease_seconds - short <= ahead <= lease_seconds + EXPIRY_TOLERANCE_SECONDS:
        return (f"expiresAt {expires_at} is {ahead:.1f} s after the server's Date header, "
                f"not the lease of {lease_seconds:.0f} s")
    return None


def listed_anywhere(context, run_ids) -> list[str]:
    """Who lists any step of these runs in their get_work, each agent and each person asked once."""
    found = []
    for caller in [*context.agents, *(caller for _, caller in context.people.values())]:
        for item in pages(caller, "get_work", limit=100):
            if item.get("runId") in run_ids:
                step = item.get("stepId") or (item.get("workItem") or {}).get("stepId")
                found.append(f"{caller.name} lists {step} of {item['runId']}")
    return found


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def text_of(value) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- runs and steps --------------------------------------------------------------------------------


def start(context, caller: Caller, process: str, inputs: dict | None = None, **extra) -> dict:
    """Start a run of a published process, inputs filled from its declaration unless given."""
    fixture = context.need_process(process)
    person = next(iter(context.people.values()))[0].value if context.people else "person@example.com"
    if inputs is None:
        inputs = fill(fixture.frontmatter.get("inputs"), person)
    view = caller.write("start_run", process=process, inputs=inputs, **extra)
    context.runs.add(view["run"]["id"])
    return view


def state(view: dict, step_id: str):
    for step in view["steps"]:
        if step["id"] == step_id:
            return step["state"]
    raise Nonconformance(f"the run view has no step {step_id}")


def item_for(view: dict, step_id: str) -> dict:
    """Return the one open work item of step_id in the run view."""
    items = [item for item in view["workItems"] if item["stepId"] == step_id]
    if len(items) != 1:
        raise Nonconformance(f"expected one work item for {step_id}, the run view has {len(items)}: "
                             f"{[item['stepId'] for item in view['workItems']]}")
    return items[0]


def pages(caller: Caller, tool: str, limit: int | None = None, **arguments):
    """Yield every item of a paged read, following nextCursor."""
    cursor = None
    for _ in range(1000):
        page = caller.ok(tool, **arguments, **({"limit": limit} if limit else {}),
                         **({"cursor": cursor} if cursor else {}))
        yield from page["items"]
        cursor = page.get("nextCursor")
        if not cursor:
            return
    raise Nonconformance(f"{tool} gave a thousand pages")


def agent_item(caller: Caller, run_id: str, step_id: str, process: str | None = None) -> dict | None:
    """Return the get_work item of one step of one run, or None when get_work does not list it."""
    for item in pages(caller, "get_work", limit=100, **({"process": process} if process else {})):
        if item["runId"] == run_id and item["stepId"] == step_id:
            return item
    return None


def person_entry(caller: Caller, run_id: str, step_id: str) -> dict | None:
    for entry in pages(caller, "get_work", limit=100):
        if entry["runId"] == run_id and entry["workItem"]["stepId"] == step_id:
            return entry
    return None


def claim(context, caller: Caller, run_id: str, step_id: str, **extra) -> dict:
    claimed = caller.write("claim", runId=run_id, stepId=step_id, **extra)
    context.tokens.add(claimed["token"])
    return claimed


def submit(context, caller: Caller, claimed: dict, **overrides) -> dict:
    """Submit a filled, acceptable output for the claimed step (overrides replace any argument)."""
    step = claimed["step"]
    arguments = {
        "token": claimed["token"],
        "output": fill(step["output"], _someone(context)),
        "evidence": evidence_for(caller, step["evidence"]),
        "summary": SUMMARY,
        **route(step),
    }
    arguments.update(overrides)
    return caller.write("submit", **arguments)


def work_agent_step(context, caller: Caller, run_id: str, step_id: str, **overrides) -> dict:
    """Claim the step and hand in an acceptable submission; return the run view."""
    return submit(context, caller, claim(context, caller, run_id, step_id), **overrides)


def decide(caller: Caller, item: dict, decision: str, **arguments) -> dict:
    call = dict(item["decide"]["arguments"])
    call.pop("requestId", None)
    return caller.write("decide", **call, decision=decision, **arguments)


def complete_task(context, caller: Caller, item: dict, **overrides) -> dict:
    """Decide `completed` on a task with an acceptable output, evidence and route."""
    arguments = {
        "output": fill(item["output"], _someone(context)),
        "evidence": evidence_for(caller, item["evidence"]),
        **route(item),
    }
    arguments.update(overrides)
    return decide(caller, item, "completed", **arguments)


def fresh_item(caller: Caller, run_id: str, step_id: str) -> dict:
    """Read the run again for a current snapshot of the step's work item."""
    return item_for(caller.ok("get_run", runId=run_id), step_id)


def wait_for(condition, seconds: float, what: str):
    """Poll condition until it returns something true, at most `seconds`; fail saying what never happened."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise Nonconformance(f"{what} did not happen within {seconds:.0f} s")
        time.sleep(POLL_SECONDS)


def need_wait(context, seconds: float, why: str) -> None:
    if seconds > context.config.max_wait:
        raise Skip(f"{why} needs about {seconds:.0f} s of waiting; allowed {context.config.max_wait:.0f} s (--max-wait)")


def _someone(context) -> str:
    return next(iter(context.people.values()))[0].value if context.people else "person@example.com"
