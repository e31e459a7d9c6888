"""The fourteen tools of tools.md as plain functions; REST and MCP both call `call_tool`.

A write runs in one transaction: it locks its run, re-checks its requestId under the lock,
goes through runs.engine, flushes, and records its result for replays (spec §4, Step 7).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import secrets
import time

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from accounts.identity import Identity
from base import backend, json_rows, keys, metrics, names, sql
from processes.capabilities import TOOLS, check_limits, enabled_profiles
from processes.definition import definition_for
from processes.kinds import StepKind
from processes.models import Process, ProcessVersion

from . import (
    agent_steps,
    decisions,
    engine,
    evaluation,
    files,
    idempotency,
    leases,
    paging,
    presenting,
    snapshots,
    store,
    timers,
)
from .arguments import check_arguments
from .assignments import assigned_items
from .canonical import iso, snapshot_of
from .errors import Invalid, NotAccepted, NotFound, ToolError, run_ended
from .models import (
    Lease,
    Run,
    RunStep,
    StepState,
    Upload,
    WorkItem,
    WorkItemState,
    public_pk,
)


def call_tool(identity: Identity, tool: str, arguments) -> dict:
    """Run one tool for one caller and return its `data`, or raise a ToolError; each call is counted and timed."""
    if tool not in TOOLS:
        raise NotFound(f"There is no tool '{tool}'.")
    started, code = time.perf_counter(), "error"
    try:
        check_arguments(tool, arguments)
        data = TOOL_FUNCTIONS[tool](identity, arguments)
        code = "ok"
        return data
    except ToolError as error:
        code = error.code
        raise
    finally:
        metrics.tool_calls(tool, code).inc()
        metrics.tool_seconds(tool).observe(time.perf_counter() - started)


# --- lookups ------------------------------------------------------------------------------------


def _run_pk(run_id: str) -> int:
    pk = public_pk(run_id, "r")
    if pk is None:
        raise NotFound(f"No run '{run_id}' in this organization.")
    return pk


def _locked(write: idempotency.Write, run_id: str, *, leases: int = 0) -> store.LoadedRun:
    """Lock the caller's run for a write; other organizations' runs do not exist here."""
    try:
        txn = engine.load_for_write(
            _run_pk(run_id), organization=write.identity.organization, also=[write.record_query()], leases=leases
        )
    except Run.DoesNotExist:
        raise NotFound(f"No run '{run_id}' in this organization.") from None
    write.recheck(txn.also[0])
    if txn.run.is_over:
        raise run_ended()
    return txn


def _view(txn: store.LoadedRun) -> dict:
    return presenting.run_view(txn.run, txn.definition, list(txn.steps.values()), txn.open_items())


# --- reads --------------------------------------------------------------------------------------


def describe(identity: Identity, arguments: dict) -> dict:
    return {
        "protocol": "agentprocess",
        "version": "core-2",
        "profiles": sorted(enabled_profiles()),
        "leaseSeconds": settings.LEASE_SECONDS,
        "person": {"format": "email"},
        "tools": list(TOOLS),
        "maxUploadBytes": settings.MAX_UPLOAD_BYTES,
        "limits": {"runDataBytes": settings.RUN_DATA_BYTES, **check_limits()},
    }


def list_processes(identity: Identity, arguments: dict) -> dict:
    limit = 50
    after = paging.read_cursor(arguments.get("cursor"), 1)
    processes = Process.objects.filter(organization=identity.organization, versions__isnull=False).distinct()
    if after:
        processes = processes.filter(name__gt=after[0])
    page = list(processes.order_by("name")[: limit + 1])
    latest = {}
    for version in ProcessVersion.objects.filter(process__in=page[:limit]).order_by("process_id", "-number"):
        latest.setdefault(version.process_id, version)
    items = []
    for process in page[:limit]:
        version = latest[process.pk]
        frontmatter = definition_for(version).frontmatter
        entry = {
            "name": process.name,
            "description": frontmatter["description"],
            "version": version.number,
            "inputs": frontmatter.get("inputs") or {},
        }
        if frontmatter.get("requires"):
            entry["requires"] = frontmatter["requires"]
        items.append(entry)
    return {"items": items, "nextCursor": paging.make_cursor([page[limit - 1].name]) if len(page) > limit else None}


def get_run(identity: Identity, arguments: dict) -> dict:
    pk = _run_pk(arguments["runId"])
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and outermost:
            # One snapshot for the run, its steps and its items, so the view's snapshot matches its items.
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        # The run, its steps and its open items in one round trip (PostgreSQL).
        found, rows, items = sql.select_many([
            (Run, "t.id = %s" + store.IN_ORGANIZATION, [pk, identity.organization.pk], ""),
            (RunStep, "t.run_id = %s", [pk], ""),
            (WorkItem, "t.run_id = %s AND t.state = %s", [pk, WorkItemState.OPEN], ""),
        ])
        if not found:
            raise NotFound(f"No run '{arguments['runId']}' in this organization.")
        [run] = found
        if run.wake_at is None or run.wake_at > timezone.now():
            run.version = store.published_version(run.version_id)
            return presenting.run_view(run, definition_for(run.version), rows, items)
    # Time has changed this run: catch it up under its lock, as a write would, and show the result.
    with transaction.atomic():
        txn = engine.load_for_write(pk)
        engine.flush(txn)
        return _view(txn)


def _person_work(identity: Identity, *, limit: int, cursor: str | None, process: str | None) -> dict:
    items = assigned_items(identity, ("run__version", "step"))
    if process:
        items = items.filter(run__process_name=process)
    after = paging.cursor_after(cursor)
    if after is not None:
        since, pk = after
        items = items.filter(Q(created_at__gt=since) | Q(created_at=since, pk__gt=pk))
    page = items[: limit + 1]
    hashes: dict[int, str] = {}  # each run's data hashed once, however many of its items the page shows
    entries = []
    for item in page[:limit]:
        run = item.run
        snapshot = hashes.get(run.pk)
        if snapshot is None:
            snapshot = hashes[run.pk] = snapshot_of(run.data)
        entries.append(
            {
                "runId": run.public_id,
                "process": run.process_name,
                "version": run.version.number,
                "mode": run.mode,
                "workItem": presenting.work_item(run, definition_for(run.version), item, item.step, snapshot),
            }
        )
    last = page[limit - 1] if len(page) > limit else None
    return {"items": entries, "nextCursor": paging.encode_cursor(last.created_at, last.pk) if last else None}



def get_work(identity: Identity, arguments: dict) -> dict:
    limit = int(arguments.get("limit", 20))  # JSON Schema integers admit 5.0
    if identity.is_human:
        timers.catch_up(organization=identity.organization)
        return _person_work(identity, limit=limit, cursor=arguments.get("cursor"), process=arguments.get("process"))
    # Plain SQL on the steps alone (they carry their run's process, version and mode): every agent polls
    # this, and the ready-work index answers it in (organization, kind, state, ready_since, id).
    statement = (
        f"SELECT {sql.columns(RunStep, 't')} FROM {backend.quote_name(RunStep._meta.db_table)} t"
        " WHERE t.organization_id = %s AND t.kind = %s AND t.state = %s"
    )
    params: list = [identity.organization.pk, StepKind.AGENT, StepState.READY]
    if arguments.get("process"):
        statement += " AND t.process_name = %s"
        params.append(arguments["process"])
    after = paging.cursor_after(arguments.get("cursor"))
    if after:
        since, pk = after
        statement += " AND (t.ready_since > %s OR (t.ready_since = %s AND t.id > %s))"
        params += [since, since, pk]
    ready = (statement + " ORDER BY t.ready_since, t.id LIMIT %s", [*params, limit + 1])
    # The look for runs that time has changed goes with the first look for work, in one round trip.
    due, found = timers.due_beside(ready, organization=identity.organization, order="q.ready_since, q.id")
    if due and timers.catch_up_runs(due):
        found = sql.fetch(*ready)
    page = []
    for values in found:
        row = sql.build(RunStep, values)
        row.run = backend.created(Run, id=row.run_id, organization_id=row.organization_id, process_name=row.process_name,
                                  version=store.published_version(row.version_id), mode=row.mode)
        page.append(row)
    items = [presenting.agent_work_entry(row, row.run) for row in page[:limit]]
    last = page[limit - 1] if len(page) > limit else None
    return {"items": items, "nextCursor": paging.encode_cursor(last.ready_since, last.pk) if last else None}


def list_runs(identity: Identity, arguments: dict) -> dict:
    limit = int(arguments.get("limit", 20))  # JSON Schema integers admit 5.0
    timers.catch_up(organization=identity.organization)
    runs = Run.objects.filter(organization=identity.organization).select_related("version")
    if arguments.get("process"):
        runs = runs.filter(process_name=arguments["process"])
    if arguments.get("state"):
        runs = runs.filter(state=arguments["state"])
    for index, (name, value) in enumerate(sorted((arguments.get("inputs") or {}).items())):
        alias = f"input_{index}"
        runs = runs.annotate(**{alias: KeyTransform(name, KeyTransform("inputs", "data"))}).filter(**{alias: value})
    after = paging.cursor_after(arguments.get("cursor"))
    if after:
        since, pk = after
        runs = runs.filter(Q(started_at__lt=since) | Q(started_at=since, pk__lt=pk))
    page = list(runs.order_by("-started_at", "-pk")[: limit + 1])
    items = [
        {
            "id": run.public_id,
            "process": run.process_name,
            "version": run.version.number,
            "state": run.state,
            "outcome": run.outcome,
            "startedAt": iso(run.started_at),
            "updatedAt": iso(run.updated_at),
            "inputs": run.data.get("inputs", {}),
        }
        for run in page[:limit]
    ]
    last = page[limit - 1] if len(page) > limit else None
    return {"items": items, "nextCursor": paging.encode_cursor(last.started_at, last.pk) if last else None}


# --- writes -------------------------------------------------------------------------------------


def _published_select(identity: Identity, name: str, number: int | None) -> tuple[str, list]:
    """The SELECT of the caller's published version of a process by name: the given number, else the newest."""
    quote = backend.quote_name
    statement = (
        f"SELECT v.id FROM {quote(ProcessVersion._meta.db_table)} v JOIN {quote(Process._meta.db_table)} p"
        " ON p.id = v.process_id WHERE p.organization_id = %s AND p.name = %s"
    )
    params: list = [identity.organization.pk, name]
    if number is not None:
        statement += " AND v.number = %s"
        params.append(int(number))
    return statement + " ORDER BY v.number DESC LIMIT 1", params


# The version each start_run by name found last in this process, by (organization, name, number): the
# next one stands on it without reading it, past a guard that finds it still the one (idempotency.Guess).
started_versions: dict[tuple, int] = {}
STARTED_VERSIONS = 4096


def _start_guess(identity: Identity, name: str, number: int | None) -> idempotency.Guess | None:
    """What start_run's first round trip would find (the version, a key for the run), as found last."""
    remembered = (identity.organization.pk, name, number)
    version_id = started_versions.get(remembered)
    if version_id is None:
        return None
    statement, params = _published_select(identity, name, number)
    return idempotency.Guess(
        looked_up=[[(version_id,)], [(key,) for key in snapshots.keys_ahead(Run, 1)]],
        guard=(f"SELECT 1 FROM ({statement}) q WHERE q.id = %s", [*params, version_id]),
        wrong=functools.partial(started_versions.pop, remembered, None),
    )


def _storable_version(number: int) -> bool:
    """Whether a version number is within what the database stores; no version beyond it exists."""
    field = ProcessVersion._meta.get_field("number")
    low, high = backend.integer_range(field)
    return (low is None or number >= low) and (high is None or number <= high)


def start_run(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        found, *reserved = write.looked_up
        version = store.published_version(found[0][0]) if found else None
        if version is None:
            wanted = f" version {arguments['version']}" if "version" in arguments else ""
            raise NotFound(f"No published process '{arguments['process']}'{wanted} in this organization.")
        if len(started_versions) >= STARTED_VERSIONS:
            started_versions.clear()
        started_versions[identity.organization.pk, arguments["process"], number] = version.pk
        # With a key that came with the lookups, the run's INSERTs join the batch.
        txn = engine.new_run(identity=identity, version=version, inputs=arguments["inputs"],
                             mode=arguments.get("mode", "live"), key=reserved[0][0][0] if reserved else None)
        engine.flush(txn)
        return idempotency.Outcome(_view(txn), run=txn.run)

    number = arguments.get("version")
    if number is not None and not _storable_version(int(number)):
        raise NotFound(f"No published process '{arguments['process']}' version {number} in this organization.")
    number = None if number is None else int(number)  # JSON Schema integers admit 5.0
    statement, params = _published_select(identity, arguments["process"], number)
    run_key = keys.next_ids(Run)
    # A guess needs a key for its run ahead of the INSERT, which only a sequence gives.
    guess = _start_guess(identity, arguments["process"], number) if run_key and idempotency.optimistic_writes() else None
    return idempotency.once(identity, "start_run", arguments, perform, guess=guess,
                            lookups=[(json_rows.integer_rows(statement), params)] + ([run_key] if run_key else []))


def claim(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        txn = _locked(write, arguments["runId"], leases=1)
        lease = agent_steps.claim(txn, identity=identity, step_id=arguments["stepId"])
        engine.flush(txn)
        row = txn.steps[arguments["stepId"]]
        token = leases.token_for(lease.public_id)
        data = presenting.claim_result(txn.run, txn.definition, row, token, lease.expires_at)
        return idempotency.Outcome(data, run=txn.run, lease=lease.public_id)

    return idempotency.once(identity, "claim", arguments, perform)


def _held(write: idempotency.Write, token: str, *, new_leases: int = 0) -> tuple[store.LoadedRun, RunStep]:
    """Lock the run a lease token names, with the lease and the requestId look in the same round trip;
    keys for `new_leases` come in it too."""
    lease_id = leases.lease_id_from(token)
    txn = None
    if lease_id is not None:
        try:
            txn = engine.load_for_write(
                None, organization=write.identity.organization, lease_id=lease_id,
                also=[(Lease, "t.public_id = %s", [lease_id], ""), write.record_query()], leases=new_leases,
            )
        except Run.DoesNotExist:
            txn = None  # no such lease, or one of another organization's runs
    if txn is None or not txn.also[0]:
        raise Invalid("The token does not verify.", ["token: does not verify"])
    [lease] = txn.also[0]
    write.recheck(txn.also[1])
    if txn.run.is_over:
        raise run_ended()
    return txn, agent_steps.held_step(txn, lease, write.identity)


def renew(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        txn, row = _held(write, arguments["token"], new_leases=1)
        lease = agent_steps.renew(txn, row, identity=identity, progress=arguments.get("progress"))
        engine.flush(txn)
        data = {"token": leases.token_for(lease.public_id), "expiresAt": iso(lease.expires_at)}
        return idempotency.Outcome(data, run=txn.run, lease=lease.public_id)

    return idempotency.once(identity, "renew", arguments, perform)


def submit(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write, answered: evaluation.Answered | None) -> idempotency.Outcome:
        txn, row = _held(write, arguments["token"])
        try:
            record = agent_steps.accept(
                txn,
                row,
                identity=identity,
                output=arguments["output"],
                evidence=arguments.get("evidence", []),
                summary=arguments["summary"],
                next_step=arguments.get("next"),
                reason=arguments.get("reason"),
                require_summary=True,
            )
            verdict = agent_steps.check_verdict(txn, row, record=record, holder=f"lease {row.lease_id}", answered=answered)
        except NotAccepted as refused:
            agent_steps.refuse_submission(txn, row, refused)
            engine.flush(txn)
            return idempotency.Outcome({}, error=refused)
        agent_steps.submit(txn, row, identity=identity, record=record, verdict=verdict)
        engine.flush(txn)
        return idempotency.Outcome(_view(txn), run=txn.run)

    return idempotency.once_checked(identity, "submit", arguments, perform)


def escalate(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        txn, row = _held(write, arguments["token"])
        agent_steps.escalate(txn, row, identity=identity, note=arguments["note"])
        engine.flush(txn)
        return idempotency.Outcome(_view(txn), run=txn.run)

    return idempotency.once(identity, "escalate", arguments, perform)


def decide(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write, answered: evaluation.Answered | None) -> idempotency.Outcome:
        txn = _locked(write, arguments["runId"])
        try:
            decisions.decide(
                txn,
                identity=identity,
                work_item_id=arguments["workItemId"],
                snapshot=arguments["snapshot"],
                decision=arguments["decision"],
                output=arguments.get("output"),
                evidence=arguments.get("evidence"),
                summary=arguments.get("summary"),
                next_step=arguments.get("next"),
                reason=arguments.get("reason"),
                note=arguments.get("note"),
                answered=answered,
            )
        except NotAccepted as refused:
            engine.flush(txn)  # keeps the task's handoff: the issues, and a failed check's verdict (spec §3.3, check-1 §3)
            return idempotency.Outcome({}, error=refused)
        engine.flush(txn)
        return idempotency.Outcome(_view(txn), run=txn.run)

    return idempotency.once_checked(identity, "decide", arguments, perform)


def cancel(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        txn = _locked(write, arguments["runId"])
        engine.cancel(txn, identity=identity, reason=arguments["reason"])
        engine.flush(txn)
        return idempotency.Outcome(_view(txn), run=txn.run)

    return idempotency.once(identity, "cancel", arguments, perform)


def send_event(identity: Identity, arguments: dict) -> dict:
    def perform(write: idempotency.Write) -> idempotency.Outcome:
        txn = _locked(write, arguments["runId"])
        consumed_by = engine.send_event(txn, identity=identity, name=arguments["name"], data=arguments.get("data"))
        engine.flush(txn)
        return idempotency.Outcome({"consumedBy": consumed_by}, run=txn.run)

    return idempotency.once(identity, "send_event", arguments, perform)


def upload(identity: Identity, arguments: dict) -> dict:
    issues = []
    if problem := names.name_problem(arguments["fileName"]):
        issues.append(f"fileName: {problem}")
    if problem := files.content_type_problem(arguments["contentType"]):
        issues.append(f"contentType: {problem}")
    if issues:
        raise Invalid("The file cannot be stored as described.", issues)
    encoded = arguments["contentBase64"]
    limit = settings.MAX_UPLOAD_BYTES
    # The decoded size of anything b64decode(validate=True) accepts, worked out without decoding it.
    if len(encoded) // 4 * 3 - encoded[-2:].count("=") > limit:
        raise Invalid(f"The file is larger than maxUploadBytes ({limit}).", [f"contentBase64: over {limit} bytes"])
    try:
        content = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid("contentBase64 is not valid base64.", ["contentBase64: not valid base64"]) from exc

    def perform(write: idempotency.Write) -> idempotency.Outcome:
        digest = hashlib.sha256(content).hexdigest()
        stored = Upload(
            organization=identity.organization,
            public_id=f"f_{secrets.token_hex(12)}",
            file_name=arguments["fileName"],
            content_type=arguments["contentType"],
            sha256=digest,
            size=len(content),
            content=content,
            uploaded_by=identity.ref,
        )
        sql.insert_later(stored)  # with the write's record, in its one statement
        return idempotency.Outcome({"id": stored.public_id, "sha256": digest, "bytes": len(content)})

    return idempotency.once(identity, "upload", arguments, perform)


TOOL_FUNCTIONS = {
    "describe": describe,
    "list_processes": list_processes,
    "start_run": start_run,
    "get_run": get_run,
    "get_work": get_work,
    "claim": claim,
    "renew": renew,
    "upload": upload,
    "submit": submit,
    "escalate": escalate,
    "decide": decide,
    "cancel": cancel,
    "send_event": send_event,
    "list_runs": list_runs,
}

__all__ = ["TOOL_FUNCTIONS", "call_tool"]
