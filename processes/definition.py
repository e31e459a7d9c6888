"""A published frontmatter compiled into the step graph the engine walks."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from processes.kinds import OUTPUT_KINDS, PERSON_KINDS, StepKind
from processes.parsing import parse_process
from processes.spec import JOIN, parse_duration


def duration_seconds(text: str | None) -> int | None:
    """A published duration (`30m`, `4h`, `2d`) in seconds; None where there is none."""
    return parse_duration(text) if text else None


@dataclass(frozen=True)
class StepDef:
    id: str
    index: int
    kind: str
    value: Any
    output: dict | None = None
    evidence: tuple[str, ...] | None = None
    routes: tuple[dict, ...] | None = None
    next: str | None = None
    person: str | None = None
    on_reject: str | None = None
    due_seconds: int | None = None
    timeout_seconds: int | None = None
    on_timeout: str | None = None
    entries: tuple[str, ...] = ()
    branch: str | None = None
    branch_entry: str | None = None
    check: Any = None
    advisory: bool = False

    @property
    def is_person(self) -> bool:
        return self.kind in PERSON_KINDS

    @property
    def instructions(self) -> str:
        return self.value if isinstance(self.value, str) else ""

    @property
    def route_targets(self) -> tuple[str, ...]:
        return tuple(route["to"] for route in self.routes or ())

    def requirements(self) -> dict:
        """The step's requirements exactly as `claim.step` and work items give them (tools.md)."""
        return {
            "output": self.output if self.kind in OUTPUT_KINDS else None,
            "evidence": list(self.evidence)
            if self.evidence is not None and self.kind in OUTPUT_KINDS
            else None,
            "next": [dict(route) for route in self.routes] if self.routes else None,
        }


@dataclass(frozen=True)
class Definition:
    steps: tuple[StepDef, ...]
    by_id: dict[str, StepDef] = field(repr=False)
    inputs: dict
    body: str
    frontmatter: dict = field(default_factory=dict, repr=False)

    @property
    def first(self) -> StepDef:
        return self.steps[0]

    def __getitem__(self, step_id: str) -> StepDef:
        return self.by_id[step_id]

    def uses_initiator(self) -> bool:
        return any(step.person == "initiator" for step in self.steps)


def _route(raw) -> dict:
    if isinstance(raw, str):
        return {"to": raw}
    route = {"to": raw["to"]}
    if raw.get("when") is not None:
        route["when"] = raw["when"]
    return route


def compile_definition(frontmatter: dict, body: str = "") -> Definition:
    """Compile a frontmatter that passed validation; defaults (following step, on_timeout) are resolved."""
    raw_steps = frontmatter["steps"]
    ids = [raw["id"] for raw in raw_steps]
    compiled: list[StepDef] = []
    for index, raw in enumerate(raw_steps):
        kind = next(key for key in StepKind if key in raw)
        nxt = raw.get("next")
        routes = None
        if isinstance(nxt, list):
            routes = tuple(_route(item) for item in nxt)
            nxt = None
        elif nxt is None and kind != "finish" and index + 1 < len(ids):
            nxt = ids[index + 1]
        evidence = raw.get("evidence")
        compiled.append(
            StepDef(
                id=raw["id"],
                index=index,
                kind=kind,
                value=raw[kind],
                output=raw.get("output") if kind in OUTPUT_KINDS else None,
                evidence=tuple(evidence) if evidence is not None else None,
                routes=routes,
                next=nxt,
                person=raw.get("person"),
                on_reject=raw.get("on_reject"),
                due_seconds=duration_seconds(raw.get("due")),
                timeout_seconds=duration_seconds(raw.get("timeout")),
                on_timeout=raw.get("on_timeout") or nxt,
                entries=tuple(raw[kind]) if kind == "parallel" else (),
                check=raw.get("check"),
                advisory=bool(raw.get("advisory", False)),
            )
        )
    by_id = {step.id: step for step in compiled}
    # A branch is its entry plus everything reachable from it along next/on_timeout until `join`.
    branch_of: dict[str, tuple[str, str]] = {}
    for step in compiled:
        for entry in step.entries:
            stack = [entry]
            while stack:
                current = stack.pop()
                if current == JOIN or current in branch_of or current not in by_id:
                    continue
                branch_of[current] = (step.id, entry)
                member = by_id[current]
                stack.extend(t for t in (member.next, member.on_timeout, *member.route_targets) if t)
    if branch_of:
        compiled = [
            StepDef(
                **{**step.__dict__, "branch": branch_of[step.id][0], "branch_entry": branch_of[step.id][1]}
            )
            if step.id in branch_of
            else step
            for step in compiled
        ]
        by_id = {step.id: step for step in compiled}
    return Definition(
        steps=tuple(compiled), by_id=by_id, inputs=frontmatter.get("inputs") or {}, body=body, frontmatter=frontmatter
    )


_cache: dict[str, Definition] = {}
_cache_lock = threading.Lock()


def declared_frontmatter(source: str, stored: dict) -> dict:
    """Return a frontmatter in its declared order: parsed again from its source, else the stored one."""
    # A jsonb column does not keep the declared order of fields, and inputs are shown in that order.
    parsed = parse_process(source) if source else None
    return parsed.frontmatter if parsed and parsed.frontmatter and not parsed.issues else stored


def definition_for(version) -> Definition:
    """Return the compiled definition of a published version, cached by its content hash."""
    found = _cache.get(version.sha256)
    if found is None:
        found = compile_definition(declared_frontmatter(version.source, version.frontmatter), version.body)
        with _cache_lock:
            if len(_cache) > 2048:
                _cache.clear()
            _cache[version.sha256] = found
    return found
