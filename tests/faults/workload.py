"""The client side of the network fault harness: agents, people and an event sender in the client host.

Each caller talks HTTP to both app nodes (a node picked at random for every call, the other one after
no answer) and records every attempt in a History for tests/faults/checker.py. Every write carries a
requestId and is repeated with it on no answer or `retry` (spec §5, tools.md), and a marker the checker
can find in the final state: a submit's `summary`, a decision's or an escalation's `note`, an event's
`data.seq`, a run's `inputs.key`.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import secrets
import string
import threading
import time
import traceback
import uuid
from collections import Counter

from tests.faults import checker, netns
from tests.faults.checker import Op
from tests.faults.cluster import NODES, Cluster


class History:
    def __init__(self):
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def add(self, **fields) -> Op:
        with self._lock:
            op = Op(id=len(self.ops), **fields)
            self.ops.append(op)
            return op


class Conditions:
    """What the nemesis sets for the client side: how often an answer read is thrown away."""

    def __init__(self):
        self.drop_rate = 0.0


class Caller:
    """One agent or person in the client host: HTTP to either node, every attempt recorded."""

    def __init__(self, name: str, net: netns.Network, history: History, conditions: Conditions, rng: random.Random,
                 headers: dict, timeout: float = 12):
        self.name, self.net, self.history, self.conditions, self.rng = name, net, history, conditions, rng
        self.headers = {"Content-Type": "application/json", **headers}
        self.timeout = timeout
        self.node = rng.choice(NODES)
        self.conns: dict[str, http.client.HTTPConnection] = {}
        self.attempts = 0

    def _send(self, node: str, tool: str, args: dict) -> Op:
        start = time.time()
        status = body = None
        outcome = "lost"
        try:
            conn = self.conns.get(node)
            if conn is None:
                conn = self.conns[node] = http.client.HTTPConnection(self.net.address(node, "front"), 8000,
                                                                     timeout=self.timeout)
            conn.request("POST", f"/api/tools/{tool}", json.dumps(args), self.headers)
            response = conn.getresponse()
            payload = response.read()
            status = response.status
            if response.will_close:
                self._close(node)
            try:
                body = json.loads(payload)
            except ValueError:
                body = {"raw": payload[:500].decode(errors="replace")}
            if isinstance(body, dict) and body.get("ok") is True and status == 200:
                outcome = "ok"
            elif status == 503 and ((body or {}).get("error") or {}).get("code") == "retry":
                outcome = "retry"
            elif status >= 500:
                outcome = "server error"
            else:
                outcome = "error"
            if tool in checker.WRITES and outcome in ("ok", "error") and self.rng.random() < self.conditions.drop_rate:
                outcome = "dropped"
                self._close(node)
        except (OSError, http.client.HTTPException):
            self._close(node)
        self.attempts += 1
        return self.history.add(actor=self.name, node=node, tool=tool, args=args, start=start, end=time.time(),
                                outcome=outcome, status=status, body=body)

    def _close(self, node: str) -> None:
        conn = self.conns.pop(node, None)
        if conn is not None:
            conn.close()

    def call(self, tool: str, args: dict, *, budget: float = 150) -> Op | None:
        """Call until answered (ok or error), the same requestId throughout; None when the budget ran out."""
        if tool in checker.WRITES:
            args.setdefault("requestId", str(uuid.uuid4()))
        deadline = time.monotonic() + budget
        delay = 0.1
        self.node = self.rng.choice(NODES)  # every call may land on either node
        while True:
            op = self._send(self.node, tool, args)
            if op.outcome in ("ok", "error"):
                return op
            if time.monotonic() > deadline:
                return None
            # No answer, or `retry`: the same call again (spec §5), through the other node after no answer.
            if op.outcome != "retry":
                self.node = NODES[(NODES.index(self.node) + 1) % len(NODES)]
            time.sleep(delay * (0.5 + self.rng.random()))
            delay = min(2.0, delay * 2)


class Workload:
    """Agents, people and an event sender, each a thread in the client host."""

    def __init__(self, cluster: Cluster, history: History, conditions: Conditions, seed: int):
        self.cluster, self.history, self.conditions, self.seed = cluster, history, conditions, seed
        self.stop = threading.Event()
        self.draining = threading.Event()
        self.runs: dict[str, str] = {}  # run id -> process
        self.ended: set[str] = set()
        self.rejections: Counter = Counter()
        self.events_sent: Counter = Counter()
        self.seq = iter(range(1, 10**9))
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.tokens: list[str] = []
        self.live_runs = 16

    def caller(self, name: str, headers: dict, salt: int) -> Caller:
        return Caller(name, self.cluster.net, self.history, self.conditions, random.Random(self.seed * 1000 + salt),
                      headers)

    def start(self) -> None:
        creds = self.cluster.credentials
        for n, (client_id, secret) in enumerate(creds["agents"]):
            self._thread(self._agent, n, client_id, secret, agent_index=n)
        for n, person in enumerate(creds["people"]):
            self._thread(self._person, n, person)
        self._thread(self._events, 0, *creds["agents"][0])

    def _thread(self, target, *args, **kwargs) -> None:
        def body():
            netns.enter(self.cluster.net.ns("client"))
            try:
                target(*args)
            except Exception as exc:  # a workload thread's crash is reported, never swallowed
                self.errors.append(f"{target.__name__}{args[:1]}: {traceback.format_exc()[-2000:]}")
                raise exc from None

        thread = threading.Thread(target=body, daemon=True, name=f"{target.__name__}-{args[0]}")
        self.threads.append(thread)
        thread.start()

    def token(self, client_id: str, secret: str) -> str:
        deadline = time.monotonic() + 300
        while True:
            for node in NODES:
                try:
                    return _client_credentials(self.cluster.net.address(node, "front"), client_id, secret)
                except (OSError, http.client.HTTPException, ValueError, KeyError):
                    if time.monotonic() > deadline:
                        raise
            time.sleep(1)

    # --- agents -------------------------------------------------------------------------------

    def _agent(self, n: int, client_id: str, secret: str) -> None:
        token = self.token(client_id, secret)
        me = self.caller(f"agent{n}", {"Authorization": f"Bearer {token}"}, n)
        rng = me.rng
        stale: list[tuple[float, str, str]] = []  # (when to try, token, step) of leases left to expire
        while not self.stop.is_set():
            with self.lock:
                live = len(self.runs) - len(self.ended)
            if not self.draining.is_set() and live < self.live_runs and rng.random() < 0.3:
                self._start(me, "net-park" if rng.random() < 0.08 else "net-flow")
            for due, old, step in [s for s in stale if s[0] < time.time()]:
                stale.remove((due, old, step))
                me.call("submit", {"token": old, "output": {"n": 0}, "summary": f"late:{uuid.uuid4()}"} |
                        ({"evidence": []} if step == "build" else {}))
            work = me.call("get_work", {"limit": 20}, budget=20)
            items = work.data.get("items", []) if work and work.answered_ok else []
            if not items:
                time.sleep(0.2 + rng.random() * 0.3)
                continue
            item = rng.choice(items)
            claim = me.call("claim", {"runId": item["runId"], "stepId": item["stepId"]})
            if claim is None or not claim.answered_ok:
                continue
            self._work(me, claim, stale)

    def _start(self, me: Caller, process: str) -> None:
        op = me.call("start_run", {"process": process, "inputs": {"key": str(uuid.uuid4())}})
        if op is not None and op.answered_ok:
            with self.lock:
                self.runs[op.data["run"]["id"]] = process

    def _work(self, me: Caller, claim: Op, stale: list) -> None:
        rng = me.rng
        token, step = claim.data["token"], claim.args["stepId"]
        choice = rng.random()
        if choice < 0.08:
            # Leave the lease to expire; later, show that its token no longer works.
            stale.append((checker.when(claim.data["expiresAt"]) + 1.5, token, step))
            return
        for _ in range(rng.choice((0, 0, 1, 2))):
            time.sleep(rng.random() * 0.5)
            renewed = me.call("renew", {"token": token, "progress": f"p{rng.randrange(100)}"})
            if renewed is None or not renewed.answered_ok:
                return  # the lease ended (stale): someone else may hold the step now
            token = renewed.data["token"]
        if step == "build" and choice < 0.2:
            me.call("escalate", {"token": token, "note": f"stuck:{uuid.uuid4()}"})
            return
        args: dict = {"token": token, "output": {"n": rng.randrange(1000)}, "summary": f"s:{uuid.uuid4()}"}
        if step == "build":
            upload = me.call("upload", {"fileName": "build.txt", "contentType": "text/plain",
                                        "contentBase64": base64.b64encode(os.urandom(64)).decode()})
            if upload is None or not upload.answered_ok:
                return
            args["evidence"] = [{"kind": "file", "ref": upload.data["id"]}]
        if rng.random() < 0.1:
            me.call("submit", {**args, "output": {"n": "not a number"}, "summary": f"bad:{uuid.uuid4()}"})
        me.call("submit", args)

    def _events(self, n: int, client_id: str, secret: str) -> None:
        """An agent identity that sends each live run the events its waits need, some before they are ready."""
        token = self.token(client_id, secret)
        me = self.caller("events", {"Authorization": f"Bearer {token}"}, 200 + n)
        while not self.stop.is_set():
            self._send_events(me)
            time.sleep(0.2)

    def _send_events(self, me: Caller) -> None:
        with self.lock:
            live = [run for run, process in self.runs.items() if run not in self.ended]
        for run_id in live:
            if self.stop.is_set():
                return
            view = me.call("get_run", {"runId": run_id}, budget=20)
            if view is None or not view.answered_ok:
                continue
            if view.data["run"].get("ended") or self.runs[run_id] != "net-flow":
                if view.data["run"].get("ended") or any(s["id"] == "hold" and s.get("state") == "waiting"
                                                        for s in view.data["steps"]):
                    with self.lock:
                        self.ended.add(run_id)  # ended, or parked for good
                continue
            consumed = sum(1 for _a, _p, step, _r in checker.completions(view.data) if step in ("signal", "signal2"))
            waiting = any(s["id"] in ("signal", "signal2") and s.get("state") == "waiting" for s in view.data["steps"])
            outstanding = self.events_sent[run_id] - consumed
            if (waiting and outstanding < 1) or (outstanding < 2 and me.rng.random() < 0.15):
                self.events_sent[run_id] += 1
                me.call("send_event", {"runId": run_id, "name": "go", "data": {"seq": next(self.seq)}})

    # --- people -------------------------------------------------------------------------------

    def _person(self, n: int, person: dict) -> None:
        csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
        me = self.caller(f"person{n}", {"Cookie": f"{person['cookie']}={person['session']}; csrftoken={csrf}",
                                        "X-CSRFToken": csrf}, 100 + n)
        rng = me.rng
        while not self.stop.is_set():
            work = me.call("get_work", {"limit": 20}, budget=20)
            items = work.data.get("items", []) if work and work.answered_ok else []
            if work is not None and not work.answered_ok and work.status in (401, 403):
                raise RuntimeError(f"{me.name} cannot call as a person: {json.dumps(work.body)[:300]}")
            if not items:
                time.sleep(0.3 + rng.random() * 0.5)
                continue
            for entry in rng.sample(items, min(3, len(items))):
                item = entry["workItem"]
                arguments = dict(item["decide"]["arguments"])
                arguments.pop("requestId", None)
                if item.get("escalation"):
                    arguments.update(decision="returned", note=f"back:{uuid.uuid4()}")
                elif self.rejections[entry["runId"]] < 2 and rng.random() < 0.4:
                    arguments.update(decision="rejected", note=f"no:{uuid.uuid4()}")
                else:
                    arguments.update(decision="approved", note=f"yes:{uuid.uuid4()}")
                op = me.call("decide", arguments)
                if op is not None and op.answered_ok:
                    if arguments["decision"] == "rejected":
                        self.rejections[entry["runId"]] += 1
                    if op.data["run"].get("ended"):
                        with self.lock:
                            self.ended.add(entry["runId"])

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(200)


def _client_credentials(address: str, client_id: str, secret: str) -> str:
    conn = http.client.HTTPConnection(address, 8000, timeout=10)
    auth = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    conn.request("GET", "/.well-known/oauth-authorization-server")
    token_path = json.loads(conn.getresponse().read())["token_endpoint"].split(address + ":8000", 1)[-1]
    if token_path.startswith("http"):
        token_path = "/" + token_path.split("/", 3)[3]
    conn.request("POST", token_path, "grant_type=client_credentials&scope=agentprocess",
                 {"Authorization": f"Basic {auth}", "Content-Type": "application/x-www-form-urlencoded"})
    return json.loads(conn.getresponse().read())["access_token"]
