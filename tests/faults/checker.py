"""Check a recorded history of tool calls against the final state of the runs (tests/faults/network.py).

A history is a list of Ops: every HTTP attempt a client made, with its start and end (wall-clock seconds,
the server's clock too: one machine) and either an answer or none. An attempt whose answer the client
lost on purpose after the server sent it (`dropped`) keeps the answer in `body`, so the checker can hold
the server to it, but the client acted as if nothing came back.

The final state is every run's `get_run` view, read after the faults healed and the workload drained.
Each write carries a unique marker the checker can find in that state: a submit's `summary`, a decision's
`note` or `summary`, an event's `data.seq`, a run's `inputs.key`. Two writes leave their marker only in
later answers, not in run data: an escalation's note is shown on its work item until a person decides it,
and a `returned` decision's note is the step's `handoff.returned` until the step is done again; for these
the checker looks in every answer to another request and in the final state. A claim, renew or upload
leaves no marker: what they promise is checked through the leases below and the submits that use them.

`check(history, final, flow)` returns a list of Violations; none means the history is consistent with:

- acknowledged: every write answered ok is in the final state; error: no write answered only with errors
  changed anything (spec §3.8: a call that failed is not recorded);
- replay: every answer to one requestId equals the first ok answer, token included (spec §3.2, tools.md claim);
- exclusive: no step was held by two callers at once; expired: no token worked after its lease ended,
  after a renew replaced it, after a submit or escalation ended its lease, or after its run ended
  (tools.md renew, submit, escalate);
- order: per run, completions follow the declared steps, a rejection continues at on_reject (spec §3.3);
  first decision: one work item, one accepted decision (tools.md decide); history: a rejection moved exactly
  the steps from on_reject on into history (spec §3.1);
- events: held events with one name were consumed oldest first (spec §3.6);
- progress: every run ended, or waits on an event the workload never sends, in the final state (read once
  every run settled or the drain bound after the heal passed: tests/faults/network.py); and the figure
  `heal to all moving (s)`, from the heal to the first write, or the end, of every run live then.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime

WRITES = frozenset({"start_run", "claim", "renew", "upload", "submit", "escalate", "send_event", "decide", "cancel"})
TOKEN_TOOLS = frozenset({"renew", "submit", "escalate"})
# Our clock and the server's are the same clock; this much slack covers rounding and scheduling.
MARGIN = 0.25


@dataclass
class Op:
    """One attempt: `outcome` is ok, error, retry (503 `retry`), lost (no answer) or dropped (answer thrown away)."""

    id: int
    actor: str
    node: str
    tool: str
    args: dict
    start: float
    end: float
    outcome: str
    status: int | None = None
    body: dict | None = None

    @property
    def request_id(self) -> str | None:
        return self.args.get("requestId")

    @property
    def answered_ok(self) -> bool:
        """The server said ok, whether or not the client got to read it."""
        return self.outcome in ("ok", "dropped") and bool(self.body and self.body.get("ok"))

    @property
    def data(self) -> dict:
        return (self.body or {}).get("data") or {}

    @property
    def code(self) -> str | None:
        return ((self.body or {}).get("error") or {}).get("code")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> Op:
        return cls(**json.loads(line))


@dataclass(frozen=True)
class Flow:
    """A process as the checker needs it: which completion may follow which, and where a rejection goes."""

    order: list  # step ids in declared order (completing ones only)
    follows: dict  # step id -> set of step ids that may complete right after it
    first: str
    approval: str
    on_reject: str
    waits: frozenset  # wait_for steps (their output is the event data)
    never: frozenset = frozenset()  # wait steps whose event the workload never sends: a run may wait there


@dataclass
class Violation:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class Report:
    violations: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    def add(self, kind: str, detail: str) -> None:
        self.violations.append(Violation(kind, detail))

    def kinds(self) -> set:
        return {v.kind for v in self.violations}


def when(stamp: str | None) -> float | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None


def completions(view: dict) -> list[tuple[float, int, str, dict]]:
    """Every completion recorded in a run view: (at, declared position, step id, record), in time order."""
    position = {step["id"]: n for n, step in enumerate(view.get("steps") or [])}
    found = []
    for step_id, record in ((view.get("data") or {}).get("steps") or {}).items():
        for entry in [*(record.get("history") or []), record]:
            if entry.get("at"):
                found.append((when(entry["at"]), position.get(step_id, 0), step_id, entry))
    return sorted(found, key=lambda item: (item[0], item[1]))


def _markers(view: dict) -> set:
    """Every marker a write could have left in a run: summaries, notes and event seqs, current or in history."""
    out = set()
    for _at, _pos, _step_id, record in completions(view):
        for key in ("summary", "note"):
            if record.get(key):
                out.add(record[key])
        output = record.get("output")
        if isinstance(output, dict) and "seq" in output:
            out.add(f"event:{output['seq']}")
    return out


def write_marker(op: Op) -> str | None:
    """The marker this write leaves in the run when it takes effect, if any."""
    if op.tool == "submit":
        return op.args.get("summary")
    if op.tool == "escalate":
        return op.args.get("note")
    if op.tool == "decide":
        return op.args.get("note") if op.args.get("decision") != "completed" else op.args.get("summary")
    if op.tool == "send_event":
        seq = (op.args.get("data") or {}).get("seq")
        return f"event:{seq}" if seq is not None else None
    return None


def run_of(op: Op, tokens: dict) -> str | None:
    if "runId" in op.args:
        return op.args["runId"]
    if op.tool == "start_run" and op.answered_ok:
        return op.data["run"]["id"]
    if op.args.get("token") in tokens:
        return tokens[op.args["token"]]["run"]
    return None


def check(history: list[Op], final: dict, flow: Flow, *, heal_at: float | None = None) -> Report:
    """Check `history` against `final` (run id -> get_run view after everything healed)."""
    report = Report()
    ops = sorted(history, key=lambda op: (op.start, op.id))
    by_request: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        if op.tool in WRITES and op.request_id:
            by_request[op.request_id].append(op)

    _check_replays(report, by_request)
    tokens = _tokens(ops, by_request)
    _check_acknowledged(report, ops, by_request, final, tokens)
    _check_leases(report, ops, by_request, tokens)
    for run_id, view in final.items():
        _check_order(report, run_id, view, flow)
    _check_decisions(report, by_request)
    _check_events(report, by_request, final, flow)
    _check_progress(report, ops, final, flow, tokens, heal_at)
    return report


def _check_replays(report: Report, by_request: dict) -> None:
    for request_id, attempts in by_request.items():
        first_ok = None
        for op in attempts:
            if op.args != attempts[0].args:
                report.add("replay", f"{request_id} was sent with other arguments (a client bug)")
            if op.answered_ok:
                if first_ok is None:
                    first_ok = op
                elif op.body != first_ok.body:
                    report.add("replay", f"{op.tool} {request_id}: attempt {op.id} answered "
                                         f"{json.dumps(op.body)[:300]} after {json.dumps(first_ok.body)[:300]}")
            elif first_ok is not None and op.outcome == "error":
                report.add("replay", f"{op.tool} {request_id}: attempt {op.id} answered {op.code} after an ok answer")


def _tokens(ops: list[Op], by_request: dict) -> dict:
    """Every token handed out: its run, step, holder, lease chain, expiry and when the holder had it."""
    tokens: dict[str, dict] = {}
    for op in ops:
        if not op.answered_ok:
            continue
        if op.tool == "claim":
            token = op.data["token"]
            if token not in tokens:
                tokens[token] = {"run": op.args["runId"], "step": op.args["stepId"], "actor": op.actor,
                                 "chain": token, "expires": when(op.data["expiresAt"]), "granted": op.end,
                                 "first_start": by_request[op.request_id][0].start}
        elif op.tool == "renew" and op.args.get("token") in tokens:
            old = tokens[op.args["token"]]
            new = op.data["token"]
            if new not in tokens:
                tokens[new] = {**old, "expires": when(op.data["expiresAt"]), "granted": op.end,
                               "first_start": by_request[op.request_id][0].start}
    return tokens


def _shown_notes(value, found: set) -> None:
    """Every escalation note and `returned` note in an answer or a view (work items, handoffs)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("escalation", "returned"):
                inner = item.get(key)
                if isinstance(inner, dict) and isinstance(inner.get("note"), str):
                    found.add(inner["note"])
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))


def _shown(ops: list[Op], final: dict) -> dict[str, set]:
    """Note -> who showed it: the requestIds (or op ids, for reads) of the answers, and `final`."""
    shown: dict[str, set] = defaultdict(set)
    for op in ops:
        if op.answered_ok and op.tool in ("get_work", "get_run", "claim", "start_run", "submit", "decide",
                                          "escalate", "cancel", "list_runs"):
            found: set = set()
            _shown_notes(op.data, found)
            for note in found:
                shown[note].add(op.request_id or f"op {op.id}")
    found = set()
    _shown_notes(list(final.values()), found)
    for note in found:
        shown[note].add("final")
    return shown


def _check_acknowledged(report: Report, ops: list[Op], by_request: dict, final: dict, tokens: dict) -> None:
    markers = {run_id: _markers(view) for run_id, view in final.items()}
    shown = _shown(ops, final)
    keys = {(view.get("data") or {}).get("inputs", {}).get("key"): run_id for run_id, view in final.items()}
    for request_id, attempts in by_request.items():
        op = attempts[0]
        ok = next((a for a in attempts if a.answered_ok), None)
        only_errors = ok is None and all(a.outcome == "error" for a in attempts if a.outcome != "retry") \
            and any(a.outcome == "error" for a in attempts)
        if op.tool == "start_run":
            key = (op.args.get("inputs") or {}).get("key")
            if ok is not None and ok.data["run"]["id"] not in final:
                report.add("acknowledged", f"start_run {request_id} answered run {ok.data['run']['id']}, "
                                           "which is not in the final state")
            if only_errors and key in keys:
                report.add("error", f"start_run {request_id} answered {attempts[-1].code} yet started {keys[key]}")
            continue
        marker = write_marker(op)
        if marker is None:
            continue
        run_id = run_of(ok or op, tokens)
        if run_id is None or run_id not in final:
            continue
        present = marker in markers[run_id] or any(who != request_id for who in shown.get(marker, ()))
        if ok is not None and not present and _leaves_marker(ok):
            report.add("acknowledged", f"{op.tool} {request_id} on {run_id} answered ok but `{marker}` "
                                       "is not in the final state")
        if only_errors and present:
            report.add("error", f"{op.tool} {request_id} on {run_id} answered {attempts[-1].code} "
                                f"yet `{marker}` is in the final state")


def _leaves_marker(ok: Op) -> bool:
    """A submit, decision or escalation always leaves its marker; an event only once it was consumed."""
    if ok.tool == "send_event":
        return ok.data.get("consumedBy") is not None
    return True


def _check_leases(report: Report, ops: list[Op], by_request: dict, tokens: dict) -> None:
    # When each lease chain certainly ended, from the holder's side: an ok submit or escalate, or its expiry.
    released: dict[str, float] = {}
    replaced: dict[str, float] = {}  # token -> when a renew of it certainly took effect
    for op in ops:
        token = op.args.get("token")
        if not op.answered_ok or token not in tokens:
            continue
        if op.tool in ("submit", "escalate"):
            chain, first = tokens[token]["chain"], by_request[op.request_id][0].start
            released[chain] = min(released.get(chain, first), first)
        if op.tool == "renew":
            replaced[token] = min(replaced.get(token, op.end), op.end)
    held: dict[tuple, list] = defaultdict(list)
    for token, info in tokens.items():
        until = info["expires"] - MARGIN
        if info["chain"] in released:
            until = min(until, released[info["chain"]])
        held[(info["run"], info["step"])].append((info["granted"], until, info["actor"], token, info["first_start"]))
    for (run_id, step_id), leases in held.items():
        for granted, until, actor, _token, _ in leases:
            for _g, _u, other, other_token, other_start in leases:
                other_granted = tokens[other_token]["granted"]
                if other == actor or tokens[other_token]["chain"] != other_token:
                    continue  # the same holder, or a renew (not a new claim)
                if granted <= other_start and other_granted <= until:
                    report.add("exclusive", f"{run_id}/{step_id}: {other} claimed it while {actor} held it")
    run_ended: dict[str, float] = {}
    for op in ops:
        if op.answered_ok and op.tool in ("submit", "decide", "cancel", "escalate"):
            run = (op.data.get("run") or {})
            if run.get("ended"):
                run_ended[run["id"]] = min(run_ended.get(run["id"], op.end), op.end)
    done: dict[str, tuple[float, str]] = {}  # chain -> (when a submit or escalate certainly ended it, requestId)
    for op in ops:
        token = op.args.get("token")
        if op.tool in ("submit", "escalate") and op.answered_ok and token in tokens:
            chain = tokens[token]["chain"]
            if chain not in done or op.end < done[chain][0]:
                done[chain] = (op.end, op.request_id)
    for op in ops:
        token = op.args.get("token")
        if op.tool not in TOKEN_TOOLS or not op.answered_ok or token not in tokens:
            continue
        info = tokens[token]
        first = by_request[op.request_id][0].start
        ended_by = done.get(info["chain"])
        if ended_by is not None and ended_by[1] != op.request_id and first > ended_by[0]:
            report.add("expired", f"{op.tool} {op.request_id} by {op.actor} worked with a lease that "
                                  f"{ended_by[1]} had already ended")
        if first > info["expires"] + MARGIN:
            report.add("expired", f"{op.tool} {op.request_id} by {op.actor} worked at {first:.2f}, after its "
                                  f"lease ended at {info['expires']:.2f}")
        if token in replaced and first > replaced[token] and not _is_the_renew(op, by_request, token):
            report.add("expired", f"{op.tool} {op.request_id} worked with a token a renew had replaced")
        ended = run_ended.get(info["run"])
        if ended is not None and first > ended:
            report.add("expired", f"{op.tool} {op.request_id} worked on {info['run']} after the run ended")


def _is_the_renew(op: Op, by_request: dict, token: str) -> bool:
    """A replay of the very renew that replaced the token answers it again; that is no use of a dead token."""
    return op.tool == "renew" and any(a.answered_ok for a in by_request[op.request_id]) and \
        min(a.end for a in by_request[op.request_id] if a.answered_ok) <= op.end


def _check_order(report: Report, run_id: str, view: dict, flow: Flow) -> None:
    done = [(step_id, record) for _at, _pos, step_id, record in completions(view) if step_id in flow.follows or
            step_id == flow.approval]
    if done and done[0][0] != flow.first:
        report.add("order", f"{run_id}: the first completion is {done[0][0]}, not {flow.first}")
    for (before, record), (after, _) in itertools.pairwise(done):
        if before == flow.approval and record.get("decision") == "rejected":
            allowed = {flow.on_reject}
        else:
            allowed = flow.follows.get(before, set())
        if after not in allowed:
            report.add("order", f"{run_id}: {after} completed right after {before}")
    steps = (view.get("data") or {}).get("steps") or {}
    approval = steps.get(flow.approval) or {}
    decisions = [*(approval.get("history") or []), approval] if approval.get("at") else list(approval.get("history") or [])
    rejections = sum(1 for d in decisions if d.get("decision") == "rejected")
    # The steps after the returned-to one, up to the approval, move into history at each rejection; the
    # returned-to step keeps its fields until it completes again (spec §3.1).
    rewound = flow.order[flow.order.index(flow.on_reject) + 1:flow.order.index(flow.approval)] \
        if flow.approval in flow.order else []
    last_rejection = max((when(d["at"]) for d in decisions if d.get("decision") == "rejected"), default=None)
    for step_id in flow.order:
        record = steps.get(step_id) or {}
        history = len(record.get("history") or [])
        if step_id == flow.approval:
            expected = rejections - (1 if approval.get("decision") == "rejected" else 0)
        elif step_id == flow.on_reject and rejections:
            again = record.get("at") is not None and when(record["at"]) > last_rejection
            expected = rejections - (0 if again else 1)
        elif step_id in rewound:
            expected = rejections
        else:
            expected = 0
        if history != expected:
            report.add("history", f"{run_id}: {step_id} has {history} earlier completions after {rejections} "
                                  f"rejections (expected {expected})")


def _check_decisions(report: Report, by_request: dict) -> None:
    accepted: dict[str, set] = defaultdict(set)
    for request_id, attempts in by_request.items():
        if attempts[0].tool == "decide" and any(a.answered_ok for a in attempts):
            accepted[attempts[0].args["workItemId"]].add(request_id)
    for item, requests in accepted.items():
        if len(requests) > 1:
            report.add("first decision", f"work item {item} accepted {len(requests)} decisions")


def _check_events(report: Report, by_request: dict, final: dict, flow: Flow) -> None:
    sent: dict[str, list[Op]] = defaultdict(list)  # run -> each ok event send's first ok answer
    for attempts in by_request.values():
        ok = next((a for a in attempts if a.answered_ok), None)
        if attempts[0].tool == "send_event" and ok is not None:
            sent[attempts[0].args["runId"]].append(ok)
    for run_id, sends in sent.items():
        view = final.get(run_id)
        if view is None:
            continue
        consumed = [record["output"]["seq"] for _at, _pos, step_id, record in completions(view)
                    if step_id in flow.waits and isinstance(record.get("output"), dict) and "seq" in record["output"]]
        position = {seq: n for n, seq in enumerate(consumed)}
        for older in sends:
            for newer in sends:
                a, b = older.args["data"]["seq"], newer.args["data"]["seq"]
                if older.args["name"] != newer.args["name"] or not older.end < _first_start(by_request, newer):
                    continue
                if b in position and a not in position:
                    report.add("events", f"{run_id}: event {b} was consumed while the older {a} is still held")
                elif b in position and a in position and position[b] < position[a]:
                    report.add("events", f"{run_id}: event {b} was consumed before the older {a}")


def _first_start(by_request: dict, op: Op) -> float:
    return by_request[op.request_id][0].start


def _check_progress(report: Report, ops: list[Op], final: dict, flow: Flow, tokens: dict, heal_at: float | None):
    for run_id, view in final.items():
        run = view.get("run") or {}
        if run.get("ended"):
            continue
        waiting_on = _live_steps(view)
        if _parked(view, flow):
            continue
        report.add("progress", f"{run_id} has not ended: {run.get('state')} at {', '.join(waiting_on) or 'nothing'}")
    if heal_at is None:
        return
    # From the last heal to the first write each run live then took afterwards (or to its end, when that
    # came first: an answer lost for good leaves no ok write in the history). Live at the heal: started
    # and not ended by then, by the final state's own times, and not parked.
    live = set()
    for run_id, view in final.items():
        run = view.get("run") or {}
        started, ended = when(run.get("startedAt")), when((run.get("ended") or {}).get("at"))
        if started is not None and started <= heal_at and (ended is None or ended > heal_at) \
                and not _parked(view, flow):
            live.add(run_id)
    moving = {run_id: when(final[run_id]["run"]["ended"]["at"]) - heal_at for run_id in live
              if final[run_id]["run"].get("ended")}
    for op in ops:
        if op.answered_ok and op.tool in WRITES and op.start >= heal_at:
            run_id = run_of(op, tokens)
            if run_id in live:
                moving[run_id] = min(moving.get(run_id, float("inf")), op.end - heal_at)
    report.figures["runs live at heal"] = len(live)
    report.figures["heal to all moving (s)"] = round(max((moving.get(r, float("inf")) for r in live), default=0.0), 1)


def _live_steps(view: dict) -> list[str]:
    return [step["id"] for step in view.get("steps") or [] if step.get("state") in ("ready", "claimed", "waiting")]


def _parked(view: dict, flow: Flow) -> bool:
    """A live run whose every pending step waits on what the workload never sends."""
    live = _live_steps(view)
    return not (view.get("run") or {}).get("ended") and bool(live) and all(step in flow.never for step in live)
