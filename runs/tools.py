"""The fourteen tools of tools.md as plain functions; REST and MCP both call `call_tool`.

A write runs in one transaction: it locks its run, re-checks its requestId under the lock,
goes through runs.engine, flushes, and records its result for replays (spec §4, Step 7).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema_rs
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from jsonschema import Draft202012Validator

from accounts.identity import Identity
from base import sql
from base.storable import printable, unstorable
from processes.capabilities import TOOLS, check_limits, enabled_profiles
from processes.definition import definition_for
from processes.models import Process, ProcessVersion

from . import agent_steps, decisions, engine, evaluation, files, leases, paging, presenting, store, timers
from .assignments import assigned_items
from .canonical import canonical_json, iso, snapshot_of
from .errors import Conflict, Invalid, NotAccepted, NotFound, ToolError, run_ended
from .models import (
    IdempotencyRecord,
    Lease,
    Run,
    RunStep,
    StepState,
    Upload,
    WorkItem,
    WorkItemState,
    public_pk,
)

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas" / "core-2" / "tools"
WRITE_TOOLS = frozenset(
    {"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"}
)


@functools.cache
def argument_schema(tool: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{tool}.arguments.json").read_text())


@functools.cache
def _validator(tool: str) -> Draft202012Validator:
    return Draft202012Validator(argument_schema(tool))


@functools.cache
def _fast_validator(tool: str) -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(argument_schema(tool))


def fits(tool: str, arguments) -> bool:
    """Whether `arguments` fit the tool's schema, in about a microsecond (a compiled validator)."""
    try:
        return _fast_validator(tool).is_valid(arguments)
    except (ValueError, TypeError, OverflowError):
        return False  # nothing it can read: let the full check below name what is wrong


def check_arguments(tool: str, arguments) -> None:
    """Refuse arguments that break the tool's contract, naming every problem (spec §6 rule 3)."""
    if not isinstance(arguments, dict):
        raise Invalid("Arguments must be a JSON object.", ["arguments: expected object"])
    issues = unstorable(arguments)
    if not issues and fits(tool, arguments):
        return
    # Only arguments that break the contract come here, where every problem is named, and every name
    # and value a message quotes is printable (base.storable), whatever the arguments held.
    for error in sorted(_validator(tool).iter_errors(arguments), key=lambda e: [(isinstance(p, str), p)
                                                                                 for p in e.absolute_path]):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{printable(p)}" for p in error.absolute_path)
        where = where.lstrip(".")
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            issues.extend(f"{(where + '.') if where else ''}{printable(name)}: not an argument of {tool}"
                          for name in extra)
        elif error.validator == "required":
            missing = [name for name in error.validator_value if name not in error.instance]
            issues.extend(f"{(where + '.') if where else ''}{name}: required" for name in missing)
        else:
            issues.append(f"{where or 'arguments'}: {printable(error.message, 200)}")
    if issues:
        # One schema error can name what another names too (each `required` error lists every missing name).
        raise Invalid(f"The arguments do not fit the {tool} contract.", list(dict.fromkeys(issues)))


def call_tool(identity: Identity, tool: str, arguments) -> dict:
    """Run one tool for one caller and return its `data`, or raise a ToolError."""
    if tool not in TOOLS:
        raise NotFound(f"There is no tool '{tool}'.")
    check_arguments(tool, arguments)
    return TOOL_FUNCTIONS[tool](identity, arguments)


# --- idempotency --------------------------------------------------------------------------------


class _Replayed(Exception):
    def __init__(self, data: dict):
        self.data = data


@dataclass
class _Write:
    identity: Identity
    tool: str
    request_id: str
    fingerprint: str
    looked_up: list = field(default_factory=list)

    def record_query(self) -> tuple:
        """The `sql.select_many` query for this requestId's record, to run with the write's first reads."""
        return (IdempotencyRecord, _RECORD_WHERE, [self.identity.organization.pk, self.request_id], "")

    def recheck(self, found: list) -> None:
        """Call with the run locked: a concurrent twin may have committed while this one waited."""
        if found and self.replays:
            raise _Replayed(_replay(found[0], self))

    @property
    def replays(self) -> bool:
        """Whether a recorded result may answer this call: never an agent's decide, which is always
        refused (spec §6 rule 4), even with the requestId of a person's decision."""
        return self.tool != "decide" or self.identity.is_human


@dataclass
class _Outcome:
    data: dict
    run: Run | None = None
    lease: str | None = None
    error: ToolError | None = None


def _fingerprint(identity: Identity, tool: str, arguments: dict) -> str:
    payload = {"tool": tool, "by": identity.ref, "arguments": {k: v for k, v in arguments.items() if k != "requestId"}}
    return hashlib.sha256(canonical_json(payload)).hexdigest()


_RECORD_WHERE = "t.organization_id = %s AND t.request_id = %s"


def _record(identity: Identity, request_id: str) -> IdempotencyRecord | None:
    found = sql.select(IdempotencyRecord, _RECORD_WHERE, [identity.organization.pk, request_id])
    return found[0] if found else None


def _replay(record: IdempotencyRecord, write: _Write) -> dict:
    if record.tool != write.tool or record.fingerprint != write.fingerprint:
        raise Conflict("This requestId was already used with other arguments.", ["request_id_reused"])
    data = record.result["data"]
    if record.result.get("lease"):
        data = {**data, "token": leases.token_for(record.result["lease"])}
    return data


# Writes to one run look their requestId up under the run lock (_Write.recheck), so they skip the first look.
RUN_WRITES = frozenset({"claim", "renew", "submit", "escalate", "decide", "cancel", "send_event"})


def _write(identity: Identity, tool: str, arguments: dict, perform, *, lookups=()) -> dict:
    """Run `perform(write)` in a transaction, once per requestId.

    `lookups` are (SELECT, params) to run with a new write's requestId look, in the same round trip;
    their rows are on `write.looked_up`.
    """
    write = _Write(identity, tool, arguments["requestId"], _fingerprint(identity, tool, arguments))
    if tool not in RUN_WRITES:
        found, *write.looked_up = sql.select_many([write.record_query()], raw=lookups)
        if found:
            return _replay(found[0], write)
    try:
        # The write's UPDATEs and INSERTs, its record among them, go to the database together.
        with transaction.atomic(), sql.deferred():
            outcome: _Outcome = perform(write)
            if outcome.error is None:
                stored = {"data": outcome.data}
                if outcome.lease:
                    stored = {"data": {k: v for k, v in outcome.data.items() if k != "token"}, "lease": outcome.lease}
                sql.insert_later(IdempotencyRecord(
                    organization=identity.organization,
                    request_id=write.request_id,
                    tool=tool,
                    fingerprint=write.fingerprint,
                    result=stored,
                    run=outcome.run,
                ))
    except _Replayed as replayed:
        return replayed.data
    except IntegrityError:
        record = _record(identity, write.request_id)
        if record is None:
            raise
        return _replay(record, write)
    if outcome.error is not None:
        raise outcome.error
    return outcome.data


def _checked_write(identity: Identity, tool: str, arguments: dict, perform) -> dict:
    """Run a write that may meet a check (check-1), asking the evaluator between two transactions."""
    # The first pass stops at the check with NeedsCheck and rolls back; the evaluator is asked with no
    # lock held; the second pass applies the answer only if the run still shows what the model saw.
    try:
        return _write(identity, tool, arguments, functools.partial(perform, answered=None))
    except evaluation.NeedsCheck as needed:
        answered = evaluation.evaluate(needed.request)
    return _write(identity, tool, arguments, functools.partial(perform, answered=answered))


# --- lookups ------------------------------------------------------------------------------------


def _run_pk(run_id: str) -> int:
    pk = public_pk(run_id, "r")
    if pk is None:
        raise NotFound(f"No run '{run_id}' in this organization.")
    return pk


def _locked(write: _Write, run_id: str, *, leases: int = 0) -> store.LoadedRun:
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
    snapshots: dict[int, str] = {}
    entries = []
    for item in page[:limit]:
        run = item.run
        snapshot = snapshots.setdefault(run.pk, snapshot_of(run.data))
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
        f"SELECT {sql.columns(RunStep, 't')} FROM {connection.ops.quote_name(RunStep._meta.db_table)} t"
        " WHERE t.organization_id = %s AND t.kind = %s AND t.state = %s"
    )
    params: list = [identity.organization.pk, "agent", StepState.READY]
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
    due, found = sql.fetch_many([timers.due_query(organization=identity.organization), ready])
    if due and timers.catch_up_runs(due):
        [found] = sql.fetch_many([ready])
    page = []
    for values in found:
        row = sql.build(RunStep, values)
        row.run = Run(pk=row.run_id, organization_id=row.organization_id, process_name=row.process_name,
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


def _published_query(identity: Identity, name: str, number: int | None) -> tuple[str, list]:
    """The SELECT of the caller's published version of a process by name: the given number, else the newest."""
    quote = connection.ops.quote_name
    statement = (
        f"SELECT v.id FROM {quote(ProcessVersion._meta.db_table)} v JOIN {quote(Process._meta.db_table)} p"
        " ON p.id = v.process_id WHERE p.organization_id = %s AND p.name = %s"
    )
    params: list = [identity.organization.pk, name]
    if number is not None:
        statement += " AND v.number = %s"
        params.append(int(number))
    return statement + " ORDER BY v.number DESC LIMIT 1", params


def _storable_version(number: int) -> bool:
    """Whether a version number is within what the database stores; no version beyond it exists."""
    field = ProcessVersion._meta.get_field("number")
    low, high = connection.ops.integer_field_range(field.get_internal_type())
    return (low is None or number >= low) and (high is None or number <= high)


def start_run(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write) -> _Outcome:
        found, *reserved = write.looked_up
        version = store.published_version(found[0][0]) if found else None
        if version is None:
            wanted = f" version {arguments['version']}" if "version" in arguments else ""
            raise NotFound(f"No published process '{arguments['process']}'{wanted} in this organization.")
        txn = engine.new_run(identity=identity, version=version, inputs=arguments["inputs"],
                             mode=arguments.get("mode", "live"))
        if reserved:
            txn.run.pk = reserved[0][0][0]  # its key came with the lookups: the run's INSERTs join the batch
        engine.flush(txn)
        return _Outcome(_view(txn), run=txn.run)

    number = arguments.get("version")
    if number is not None and not _storable_version(int(number)):
        raise NotFound(f"No published process '{arguments['process']}' version {number} in this organization.")
    published = _published_query(identity, arguments["process"], number)
    run_key = sql.next_ids(Run)
    return _write(identity, "start_run", arguments, perform, lookups=[published] + ([run_key] if run_key else []))


def claim(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write) -> _Outcome:
        txn = _locked(write, arguments["runId"], leases=1)
        lease = agent_steps.claim(txn, identity=identity, step_id=arguments["stepId"])
        engine.flush(txn)
        row = txn.steps[arguments["stepId"]]
        token = leases.token_for(lease.public_id)
        data = presenting.claim_result(txn.run, txn.definition, row, token, lease.expires_at)
        return _Outcome(data, run=txn.run, lease=lease.public_id)

    return _write(identity, "claim", arguments, perform)


def _held(write: _Write, token: str) -> tuple[store.LoadedRun, RunStep]:
    """Lock the run a lease token names, with the lease and the requestId look in the same round trip."""
    lease_id = leases.lease_id_from(token)
    txn = None
    if lease_id is not None:
        try:
            txn = engine.load_for_write(
                None, organization=write.identity.organization, lease_id=lease_id,
                also=[(Lease, "t.public_id = %s", [lease_id], ""), write.record_query()],
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
    def perform(write: _Write) -> _Outcome:
        txn, row = _held(write, arguments["token"])
        lease = agent_steps.renew(txn, row, identity=identity, progress=arguments.get("progress"))
        engine.flush(txn)
        data = {"token": leases.token_for(lease.public_id), "expiresAt": iso(lease.expires_at)}
        return _Outcome(data, run=txn.run, lease=lease.public_id)

    return _write(identity, "renew", arguments, perform)


def submit(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write, answered: evaluation.Answered | None) -> _Outcome:
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
            return _Outcome({}, error=refused)
        agent_steps.submit(txn, row, identity=identity, record=record, verdict=verdict)
        engine.flush(txn)
        return _Outcome(_view(txn), run=txn.run)

    return _checked_write(identity, "submit", arguments, perform)


def escalate(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write) -> _Outcome:
        txn, row = _held(write, arguments["token"])
        agent_steps.escalate(txn, row, identity=identity, note=arguments["note"])
        engine.flush(txn)
        return _Outcome(_view(txn), run=txn.run)

    return _write(identity, "escalate", arguments, perform)


def decide(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write, answered: evaluation.Answered | None) -> _Outcome:
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
            return _Outcome({}, error=refused)
        engine.flush(txn)
        return _Outcome(_view(txn), run=txn.run)

    return _checked_write(identity, "decide", arguments, perform)


def cancel(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write) -> _Outcome:
        txn = _locked(write, arguments["runId"])
        engine.cancel(txn, identity=identity, reason=arguments["reason"])
        engine.flush(txn)
        return _Outcome(_view(txn), run=txn.run)

    return _write(identity, "cancel", arguments, perform)


def send_event(identity: Identity, arguments: dict) -> dict:
    def perform(write: _Write) -> _Outcome:
        txn = _locked(write, arguments["runId"])
        consumed_by = engine.send_event(txn, identity=identity, name=arguments["name"], data=arguments.get("data"))
        engine.flush(txn)
        return _Outcome({"consumedBy": consumed_by}, run=txn.run)

    return _write(identity, "send_event", arguments, perform)


def upload(identity: Identity, arguments: dict) -> dict:
    issues = []
    if problem := files.file_name_problem(arguments["fileName"]):
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

    def perform(write: _Write) -> _Outcome:
        digest = hashlib.sha256(content).hexdigest()
        stored = Upload.objects.create(
            organization=identity.organization,
            public_id=f"f_{secrets.token_hex(12)}",
            file_name=arguments["fileName"],
            content_type=arguments["contentType"],
            sha256=digest,
            size=len(content),
            content=content,
            uploaded_by=identity.ref,
        )
        return _Outcome({"id": stored.public_id, "sha256": digest, "bytes": len(content)})

    return _write(identity, "upload", arguments, perform)


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

__all__ = ["TOOL_FUNCTIONS", "WRITE_TOOLS", "Lease", "call_tool", "check_arguments"]
