"""The fourteen tools as MCP tool definitions: a description an agent can act on, and the official inputSchema."""

from __future__ import annotations

import copy
import functools

from processes.capabilities import TOOLS
from runs.arguments import WRITE_TOOLS, argument_schema

TITLES = {
    "describe": "Describe this server",
    "list_processes": "List published processes",
    "start_run": "Start a run",
    "get_run": "Read a run",
    "get_work": "Find work",
    "claim": "Claim a step",
    "renew": "Renew a claim",
    "upload": "Upload a file",
    "submit": "Submit a step",
    "escalate": "Escalate a step to a person",
    "decide": "Decide a work item (people only)",
    "cancel": "Cancel a run (operators only)",
    "send_event": "Send an event to a run",
    "list_runs": "List runs",
}

DESCRIPTIONS = {
    "describe": (
        "Read what this agentprocess server offers before anything else: the protocol version (core-2), the "
        "profiles it honours, `leaseSeconds` (how long a claim lasts before you must renew or submit), the "
        "`person` format, the tools it offers, `maxUploadBytes` and its `limits`. It takes no arguments and "
        "changes nothing, so call it once at the start of a session."
    ),
    "list_processes": (
        "List the published processes of your organization, each with its `name`, `description`, latest "
        "`version` and the `inputs` a run of it needs (field names and types). Use it to pick the `process` "
        "and build the `inputs` for `start_run`. Results are paged: when `nextCursor` is not null, call again "
        "with `cursor` set to it."
    ),
    "start_run": (
        "Start a run of a published process by `process` name, with `inputs` that match the process's declared "
        "inputs exactly (undeclared or mistyped fields are refused as `invalid`, with every problem in "
        '`issues`). `version` defaults to the latest; `mode: "test"` starts a rehearsal in which you must not '
        "cause real external effects. Send a new UUID as `requestId`; if the answer is lost, retry with the same "
        "one and you get the same run instead of a second. Returns the run view, already showing which steps "
        "are ready."
    ),
    "get_run": (
        "Read one run by `runId`: its state and outcome, the run data (inputs and every completed step's "
        "output, evidence, summary and history), each step's state, the open work items waiting on people, and "
        "the process body. It never shows a claim token. Use it to see where a run stands, or to re-read after "
        "a `stale` error."
    ),
    "get_work": (
        "Find agent steps that are ready for you to claim, oldest first. Each item names the run, step, process, "
        "`mode`, `due` date and `handoff` (what a previous attempt left: a progress note, a person's returned "
        "note, or the issues of a refused submission; null on a first attempt), and carries the exact `claim` "
        "call to make: copy its arguments and replace `requestId` with a new UUID. Filter with `process`; page "
        "with `limit` (1-100) and `cursor`. An empty list means there is nothing to do now."
    ),
    "claim": (
        "Take a ready step (`runId`, `stepId` from a `get_work` item) so that you alone may work on it. Returns a "
        "`token` you must pass to `renew`, `submit` or `escalate`, its `expiresAt`, the step's instructions, "
        "required `output` fields, required `evidence` kinds and allowed `next` routes, the `handoff`, the "
        "process body and the run data. `conflict` means someone else holds it or it is no longer ready: move on "
        "to the next item. Send a new UUID as `requestId`; a retry with the same one returns the same claim."
    ),
    "renew": (
        "Extend your claim before `expiresAt` when the work takes longer than the lease. Pass your current "
        "`token` and optionally `progress`, a short note of what is done so far, which is handed to whoever "
        "claims the step next if your lease runs out. Returns a new `token` and `expiresAt`; the old token stops "
        "working at once, so use the new one from then on. `stale` means the lease already ended: stop and call "
        "`get_work` again. Each renewal needs a new UUID as `requestId`."
    ),
    "upload": (
        "Store a file you produced or collected as evidence, sent as `contentBase64` with its `fileName` and "
        "`contentType` (at most `maxUploadBytes` from `describe`). Returns its `id`, `sha256` and size in "
        '`bytes`; attach it to `submit` as evidence `{"kind": "file", "ref": <id>}`. Needed only when the '
        "claimed step requires `file` evidence. Send a new UUID as `requestId`; a retry with the same one "
        "returns the same file."
    ),
    "submit": (
        "Finish the step you claimed: pass the claim's `token`, an `output` object with exactly the fields the "
        "step declares, `evidence` items for every required kind (`file` items refer to `upload` ids; `link` "
        "items are recorded as stated), a `summary` of a few sentences on what you did, found and left undone, "
        "and, when the step offers several `next` routes, the chosen `next` with a `reason`. Accepted returns "
        "the run view. `not_accepted` lists every issue at once and changes nothing: your claim stands, so fix "
        "the work and submit again with a new `requestId`. `stale` means your lease ended: stop."
    ),
    "escalate": (
        "Give up a step you claimed but cannot finish: pass its `token` and a `note` saying what you tried and "
        "why you are stuck. The step goes to a person (the operators' queue), your claim ends and the token "
        "stops working; the person may return it with a note, which the next claimant reads in `handoff`, or "
        "finish it. Returns the run view. Send a new UUID as `requestId`."
    ),
    "decide": (
        "Complete a person's work item (approve, reject, complete a task, return or finish an escalated step, "
        "or fail the run) with the `runId`, `workItemId` and `snapshot` from the item's `decide` call. Only a "
        "person deciding in this server's own inbox is a human identity; every call over MCP comes from an "
        "agent client, so here it is always refused as `forbidden`. Agents do not decide: leave work items to "
        "people."
    ),
    "cancel": (
        "Cancel an active or waiting run with a `reason`; every unfinished step is cancelled and every token "
        "stops working. Only an operator of the organization, acting as a person, may cancel, so a call over "
        "MCP is refused as `forbidden`; if a run must be stopped, escalate or tell an operator."
    ),
    "send_event": (
        "Deliver a named event to a run (`runId`, `name` matching the step id pattern, optional `data` object) "
        "to satisfy a step that waits for it; the event's `data` becomes that step's output. Returns "
        "`consumedBy`, the step it completed, or null when it is held for a wait that is not ready yet (it is "
        "consumed when that step becomes ready). Send a new UUID as `requestId`; a retry with the same one "
        "delivers it once."
    ),
    "list_runs": (
        "List the organization's runs, newest first, each with its id, process, version, state, outcome, start "
        "and update times and inputs. Filter by `process`, `state` (active, waiting, ended, cancelled) and "
        "`inputs` (equality on the given fields, e.g. to find the run for one vendor before starting another); "
        "page with `limit` and `cursor`. Use `get_run` for the details of one."
    ),
}

# Added to the official schemas' properties where they say nothing, so an agent knows what to send.
PROPERTY_DESCRIPTIONS = {
    "requestId": "A new UUID for every new write; reuse it only to retry this same call.",
    "token": "The token from your `claim` (or your latest `renew`).",
    "runId": "A run id such as r_12, from get_work, start_run or list_runs.",
    "stepId": "The step id, from the get_work item's claim arguments.",
    "cursor": "The nextCursor of the previous page.",
}

INSTRUCTIONS = """\
This server runs business processes (agentprocess core-2). Your loop:
1. get_work lists ready steps; each item has the exact claim call: copy its arguments with a new requestId.
2. claim gives a token, the step's instructions, required output, evidence and next routes, and handoff.
3. Do the work with your own tools. If it takes longer than the lease, renew with the token before expiresAt.
4. For file evidence, upload the file and cite its id as {"kind": "file", "ref": id}.
5. submit the output, evidence, a summary and, when asked, next with a reason. not_accepted lists every
   issue: fix them and submit again. If you cannot finish, escalate with a note; a person takes over.
Every write needs a fresh requestId (a UUID); a retry of a lost answer reuses the same one.
Errors: stale -> stop and get_work again; conflict -> move on; retry -> repeat with the same requestId.
Agents never call decide or cancel; those are for people."""


def input_schema(tool: str) -> dict:
    """Return the tool's official argument schema in the form MCP clients accept."""
    schema = copy.deepcopy(argument_schema(tool))
    # The draft is MCP's default (2020-12) and the $id names a document the client never fetches.
    schema.pop("$schema", None)
    schema.pop("$id", None)
    for name, prop in schema.get("properties", {}).items():
        if name in PROPERTY_DESCRIPTIONS and "description" not in prop:
            prop["description"] = PROPERTY_DESCRIPTIONS[name]
    return schema


def annotations(tool: str) -> dict:
    """Return the MCP behaviour hints for the tool."""
    write = tool in WRITE_TOOLS
    return {
        "title": TITLES[tool],
        "readOnlyHint": not write,
        # Hints about writes are meaningless on a read-only tool (MCP spec), so they are given for writes only.
        **({"destructiveHint": tool == "cancel", "idempotentHint": True} if write else {}),
        "openWorldHint": False,
    }


@functools.cache
def tool_definitions() -> tuple[dict, ...]:
    """Return every tool this server offers, in describe's order, as MCP tool definitions."""
    return tuple(
        {
            "name": tool,
            "title": TITLES[tool],
            "description": DESCRIPTIONS[tool],
            "inputSchema": input_schema(tool),
            "annotations": annotations(tool),
        }
        for tool in TOOLS
    )
