"""One search box for the people pages: my work items, the organization's runs and its processes.

A run is found by its id, its process (any part of the name), its state, who started it (any part of a
name or email), or any input value, at any depth. On PostgreSQL the input value is looked for with a
jsonpath over the GIN index run_inputs; elsewhere through SQLite's json_tree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

from accounts.identity import Identity
from accounts.models import Agent, User
from processes.models import Process
from runs.assignments import AssignedItems, assigned_parts
from runs.models import Run, public_pk
from runs.transitions import RunState

LIMIT = 25
MAX_QUERY = 200
STATES = {state.value for state in RunState}
# ASCII digits only: another script's digits are searched for as text (`\d` takes them, jsonpath does not).
_RUN_ID = re.compile(r"^r_[0-9]{1,19}$")
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


@dataclass
class Found:
    query: str
    items: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    processes: list = field(default_factory=list)
    problem: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.items or self.runs or self.processes)


def search(identity: Identity, text: str) -> Found:
    """Everything this person may see that the text finds, newest runs first, oldest work first."""
    query = " ".join(text.split())
    found = Found(query)
    if not query:
        return found
    if len(query) > MAX_QUERY:
        found.problem = f"A search can be at most {MAX_QUERY} characters long; this one is {len(query)}."
        return found
    organization = identity.organization
    found.processes = list(Process.objects.filter(organization=organization, name__icontains=query)
                           .order_by("name")[:LIMIT])
    run_ids = _run_ids(identity, query, [process.name for process in found.processes])
    found.runs = list(Run.objects.filter(pk__in=run_ids).select_related("version").order_by("-started_at", "-pk"))
    items = AssignedItems(assigned_parts(identity, operators=True), ("run__version", "step", "assigned_group", "taken_by"))
    matching = Q(run_id__in=run_ids) | Q(step__step_id__icontains=query.replace(" ", "_"))
    found.items = items.filter(matching)[:LIMIT]
    return found


def _run_ids(identity: Identity, query: str, process_names: list[str]) -> list[int]:
    """The keys of the newest runs found each way, at most LIMIT of each, newest first."""
    runs = Run.objects.filter(organization=identity.organization)
    newest = ("-started_at", "-pk")
    ways = []
    exact_id = _RUN_ID.match(query)
    if exact_id:
        ways.append(runs.filter(pk=public_pk(query, "r")))
    if query.lower() in STATES:
        ways.append(runs.filter(state=query.lower()))
    if process_names:
        ways.append(runs.filter(process_name__in=process_names))
    starters = _starter_refs(identity, query)
    if starters:
        ways.append(runs.filter(started_by__in=starters))
    ways.append(runs.filter(input_value(query)))
    keys: dict[int, None] = {}
    for way in ways:
        keys.update(dict.fromkeys(way.order_by(*newest).values_list("pk", flat=True)[:LIMIT]))
    return list(keys)


def _starter_refs(identity: Identity, query: str) -> list[str]:
    """The refs of the organization's people and agents whose name or email holds the text."""
    people = User.objects.filter(membership__organization=identity.organization).filter(
        Q(email__icontains=query) | Q(first_name__icontains=query) | Q(last_name__icontains=query)
    )
    agents = Agent.objects.filter(organization=identity.organization, name__icontains=query)
    return [f"u_{pk}" for pk in people.values_list("pk", flat=True)[:LIMIT]] + [
        f"a_{pk}" for pk in agents.values_list("pk", flat=True)[:LIMIT]
    ]


def input_value(query: str) -> Q:
    """Runs with an input equal to the text (or to the number it spells), at any depth of the inputs."""
    if connection.vendor == "postgresql":
        # A jsonpath over the GIN index run_inputs (jsonb_ops indexes every value); the text is quoted
        # as a JSON string, which is a jsonpath string literal, and passed as a parameter.
        wanted = f"@ == {json.dumps(query)}" + (f" || @ == {query}" if _NUMBER.match(query) else "")
        return Q(pk__in=RawSQL(
            f"SELECT id FROM {Run._meta.db_table} WHERE (data -> 'inputs') @? %s::jsonpath",
            [f"strict $.** ? ({wanted})"],
        ))
    values = [query, *([float(query)] if _NUMBER.match(query) else [])]
    marks = ", ".join(["%s"] * len(values))
    return Q(pk__in=RawSQL(
        f"SELECT r.id FROM {Run._meta.db_table} r, json_tree(r.data, '$.inputs') j "
        f"WHERE j.atom IN ({marks}) AND j.type IN ('text', 'integer', 'real')",
        values,
    ))


def process_names(identity: Identity) -> list[str]:
    """The organization's process names, for a filter."""
    return list(Process.objects.filter(organization=identity.organization).order_by("name").values_list("name", flat=True))


def run_row(run: Run) -> dict:
    """A found run in the shape `list_runs` gives one, for the same table."""
    return {"id": run.public_id, "process": run.process_name, "version": run.version.number, "state": run.state,
            "outcome": run.outcome, "inputs": (run.data or {}).get("inputs", {}), "startedAt": run.started_at}
