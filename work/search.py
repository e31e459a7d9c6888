"""One search box for the people pages: my work items, the organization's runs and its processes.

A run is found by its id, its process (any part of the name), its state, who started it (any part of a
name or email), or by words: the start of a word of any input value, of its process's title or of a
completed step's output (runs.search). Each found run says where it matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db.models import Q

from accounts.identity import Identity
from accounts.models import Agent, User
from processes.models import Process
from runs import search as run_search
from runs.assignments import AssignedItems, assigned_parts
from runs.models import Run, public_pk
from runs.transitions import RunState

LIMIT = 25
MAX_QUERY = 200
STATES = {state.value for state in RunState}
# ASCII digits only: another script's digits are searched for as text.
_RUN_ID = re.compile(r"^r_([0-9]{1,18})$")


@dataclass
class Found:
    query: str
    items: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    processes: list = field(default_factory=list)
    problem: str | None = None
    # For each found run's key, where it matched: "input customer: Zanele Okafor", "process title: …".
    why: dict = field(default_factory=dict)

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
    ways = _run_ids(identity, query, [process.name for process in found.processes])
    run_ids = list(dict.fromkeys(pk for keys in ways.values() for pk in keys))
    found.runs = list(Run.objects.filter(pk__in=run_ids).select_related("version").order_by("-started_at", "-pk"))
    found.why = {run.pk: _why(run, query, ways) for run in found.runs}
    items = AssignedItems(assigned_parts(identity, operators=True), ("run__version", "step", "assigned_group", "taken_by"))
    matching = Q(run_id__in=run_ids) | Q(step__step_id__icontains=query.replace(" ", "_"))
    found.items = items.filter(matching)[:LIMIT]
    return found


def _run_ids(identity: Identity, query: str, process_names: list[str]) -> dict[str, list[int]]:
    """The keys of the newest runs found each way, at most LIMIT of each, newest first, by way."""
    runs = Run.objects.filter(organization=identity.organization)
    newest = ("-started_at", "-pk")
    ways = {}
    exact_id = _RUN_ID.match(query)
    if exact_id:
        ways["run id"] = runs.filter(pk=public_pk(query, "r"))
    if query.lower() in STATES:
        ways["state"] = runs.filter(state=query.lower())
    if process_names:
        ways["process name"] = runs.filter(process_name__in=process_names)
    starters = _starter_refs(identity, query)
    if starters:
        ways["started by"] = runs.filter(started_by__in=starters)
    keys = {way: list(found.order_by(*newest).values_list("pk", flat=True)[:LIMIT]) for way, found in ways.items()}
    keys["words"] = run_search.runs_with_words(identity.organization.pk, run_search.search_words(query), limit=LIMIT)
    return keys


def _why(run: Run, query: str, ways: dict[str, list[int]]) -> list[str]:
    """Where a found run matched, as people read it: the ways that found it, the places its words are."""
    shown = [way for way, keys in ways.items() if way != "words" and run.pk in keys]
    if run.pk in ways["words"]:
        shown += run_search.matched(run.process_name, run.data, run_search.search_words(query))
    return shown


def _starter_refs(identity: Identity, query: str) -> list[str]:
    """The refs of the organization's people and agents whose name or email holds the text."""
    people = User.objects.filter(membership__organization=identity.organization).filter(
        Q(email__icontains=query) | Q(first_name__icontains=query) | Q(last_name__icontains=query)
    )
    agents = Agent.objects.filter(organization=identity.organization, name__icontains=query)
    return [f"u_{pk}" for pk in people.values_list("pk", flat=True)[:LIMIT]] + [
        f"a_{pk}" for pk in agents.values_list("pk", flat=True)[:LIMIT]
    ]


def process_names(identity: Identity) -> list[str]:
    """The organization's process names, for a filter."""
    return list(Process.objects.filter(organization=identity.organization).order_by("name").values_list("name", flat=True))


def run_row(run: Run, found: Found | None = None) -> dict:
    """A found run in the shape of the runs list, with where it matched."""
    return {"id": run.public_id, "process": run.process_name, "version": run.version.number, "state": run.state,
            "outcome": run.outcome, "inputs": (run.data or {}).get("inputs", {}), "startedAt": run.started_at,
            "mode": run.mode, "matched": found.why.get(run.pk, []) if found else []}
