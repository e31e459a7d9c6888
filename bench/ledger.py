"""Where a request's app CPU goes, stage by stage, for `bench/inproc.py --ledger`.

Each stage is a function the server calls on every tool call (or the floor's request), timed where
its caller looks it up: the server's own stages (the run read, the rows saved, the answer built...)
and the driver's (psycopg's documented `Cursor.execute` and `fetch*`, which take in the CPU a round
trip costs this process). A stage's time leaves out the stages it calls, so the rows of a column add
up to the whole request; "the rest" is what no stage names: Django's handler and middleware, DRF's
dispatch, the views and the tools' own code. Timing each stage costs a few microseconds a call, which
the rest absorbs; compare the stages with each other and with the floor's, not with `inproc.py`'s
totals.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections import defaultdict
from contextlib import contextmanager

# (module, attribute, stage): the attribute is replaced on the module its callers look it up in.
STAGES = [
    ("accounts.authentication", "BearerTokenAuthentication.authenticate", "bearer token checked"),
    ("runs.tools", "check_arguments", "arguments checked"),
    ("runs.store", "load", "run read: rows to instances"),
    ("runs.snapshots", "recall", "snapshot recalled"),
    ("runs.snapshots", "remember", "snapshot kept"),
    ("runs.engine", "apply_time", "what time made due"),
    ("runs.agent_steps", "claim", "step logic"),
    ("runs.agent_steps", "held_step", "step logic"),
    ("runs.agent_steps", "accept", "step logic"),
    ("runs.agent_steps", "check_verdict", "step logic"),
    ("runs.agent_steps", "submit", "step logic"),
    ("runs.engine", "new_run", "engine: new run, event"),
    ("runs.engine", "send_event", "engine: new run, event"),
    ("runs.engine", "flush", "engine: state and wake-up"),
    ("runs.store", "save", "rows saved: changes found, statements made"),
    ("runs.effects", "record", "effects: search, passages, stamps"),
    ("base.joining", "guarded_statement", "write joined into one statement"),
    ("base.joining", "one_statement", "write joined into one statement"),
    ("runs.presenting", "run_view", "answer built"),
    ("runs.presenting", "claim_result", "answer built"),
    ("base.metrics", "tool_calls", "metrics"),
    ("base.metrics", "tool_seconds", "metrics"),
    ("rest_framework.renderers", "JSONRenderer.render", "answer rendered as JSON"),
    ("psycopg", "Cursor.execute", "driver: statements sent, round trips"),
    ("psycopg", "Cursor.fetchone", "driver: statements sent, round trips"),
    ("psycopg", "Cursor.fetchall", "driver: statements sent, round trips"),
]
REST = "the rest: Django, middleware, DRF, views, tools"


class Ledger:
    """App CPU per stage and per kind of request ("tool call" or "floor")."""

    def __init__(self):
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)  # (kind, stage): CPU seconds
        self.requests: dict[str, int] = defaultdict(int)
        self.kind: str | None = None
        self.nested: list[float] = []  # per open stage: the time of the stages it called

    @contextmanager
    def request(self, kind: str):
        """Count what runs inside as one request of `kind`."""
        self.kind, self.nested = kind, [0.0]
        started = time.process_time()
        try:
            yield
        finally:
            spent = time.process_time() - started
            self.seconds[kind, REST] += spent - self.nested[0]
            self.seconds[kind, "whole request"] += spent
            self.requests[kind] += 1
            self.kind = None

    def timed(self, function, stage: str):
        @functools.wraps(function)
        def stage_of_request(*args, **kwargs):
            if self.kind is None:
                return function(*args, **kwargs)
            self.nested.append(0.0)
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.process_time() - started
                inner = self.nested.pop()
                self.seconds[self.kind, stage] += spent - inner
                self.nested[-1] += spent

        return stage_of_request

    @contextmanager
    def installed(self):
        """Every stage of STAGES timed, and put back as it was on leaving."""
        replaced = []
        try:
            for module_name, path, stage in STAGES:
                owner = importlib.import_module(module_name)
                *outer, name = path.split(".")
                for part in outer:
                    owner = getattr(owner, part)
                # A class's own attribute (not one it inherits), so that putting it back restores the class.
                original = vars(owner)[name]
                replaced.append((owner, name, original))
                setattr(owner, name, self.timed(getattr(owner, name), stage))
            yield self
        finally:
            for owner, name, original in reversed(replaced):
                setattr(owner, name, original)

    def report(self) -> None:
        kinds = [kind for kind in ("tool call", "floor") if self.requests[kind]]
        stages = list(dict.fromkeys([stage for _module, _path, stage in STAGES] + [REST, "whole request"]))
        print("  app CPU µs per request, by stage" + "".join(f"{kind:>12}" for kind in kinds))
        for stage in stages:
            figures = [self.seconds.get((kind, stage)) for kind in kinds]
            if not any(figures):
                continue
            cells = "".join(
                f"{figure / self.requests[kind] * 1e6:>12.0f}" if figure else f"{'-':>12}"
                for kind, figure in zip(kinds, figures, strict=True)
            )
            print(f"  {stage:<44}{cells}")
        print("  requests" + " " * 36 + "".join(f"{self.requests[kind]:>12}" for kind in kinds))
