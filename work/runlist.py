"""The runs list: the organization's runs in the order a person chose, each with the steps it is at now and
who is on them.

The order and the filters are GET parameters, so a list can be bookmarked; an order this page does not
offer falls back to the default. A page of runs costs the same few queries whatever its length: the runs,
their steps at work, their open work items, and the names of the agents holding claims.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, OuterRef, Subquery

from accounts.identity import Identity
from processes.kinds import WAIT_KINDS, StepKind
from processes.wording import step_title
from runs.models import ACTIVE_STATES, Run, RunStep, StepState, WorkItem, WorkItemState, public_pk
from runs.transitions import RunState

from . import display

# The orders the runs list offers: (key, label), the first the default.
SORTS = (("started", "Started, newest first"), ("updated", "Updated, latest first"), ("due", "Due, soonest first"))


def sort_key(value: str | None) -> str:
    """The order asked for, or the default for anything else."""
    return value if value in dict(SORTS) else SORTS[0][0]


def _soonest_due():
    """The soonest due date of a run's steps still at work."""
    return Subquery(RunStep.objects.filter(run=OuterRef("pk"), state__in=list(ACTIVE_STATES), due_at__isnull=False)
                    .order_by("due_at").values("due_at")[:1])


def runs_sorted(identity: Identity, *, sort: str, process: str | None = None, state: str | None = None):
    """The organization's runs, filtered, in the order `sort` names: started or updated latest first, or
    (of the runs at work, unless a state is asked for) the one due soonest first, those due nowhere after."""
    runs = Run.objects.filter(organization=identity.organization).select_related("version")
    if process:
        runs = runs.filter(process_name=process)
    if state:
        runs = runs.filter(state=state)
    elif sort == "due":
        # Only a run at work has a step with a due date: the others need not be read to sort them last.
        runs = runs.filter(state__in=(RunState.ACTIVE, RunState.WAITING))
    if sort == "updated":
        return runs.order_by("-updated_at", "-pk")
    if sort == "due":
        return runs.annotate(due=_soonest_due()).order_by(F("due").asc(nulls_last=True), "-started_at", "-pk")
    return runs.order_by("-started_at", "-pk")


MAX_PAGE = 10_000


@dataclass
class Page:
    """One page of a list read without counting the whole list: it knows only whether another follows."""

    number: int
    rows: list
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_other_pages(self) -> bool:
        return self.has_previous or self.has_next

    @property
    def previous_page_number(self) -> int:
        return self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1


def page_of(runs, asked: int | None, size: int) -> Page:
    """The page `asked` (the first when none is asked) of `size` runs, and whether more follow."""
    number = asked or 1
    start = (number - 1) * size
    rows = list(runs[start:start + size + 1])
    return Page(number, rows[:size], len(rows) > size)


def run_row(run: Run) -> dict:
    """A run in the shape the runs table shows."""
    return {"id": run.public_id, "process": run.process_name, "version": run.version.number, "state": run.state,
            "outcome": run.outcome, "inputs": (run.data or {}).get("inputs", {}), "startedAt": run.started_at,
            "updatedAt": run.updated_at, "mode": run.mode}


def _who(row: RunStep, item: WorkItem | None, names: dict[str, str]) -> str:
    """Who is on a step at work, as people say it."""
    if row.kind == StepKind.AGENT and row.state == StepState.READY:
        return "ready for an agent"
    if row.state == StepState.CLAIMED:
        return f"{names.get(row.claimed_by or '', row.claimed_by or 'an agent')}, claimed"
    if row.kind in WAIT_KINDS:
        return "waiting"
    if item is None:
        return "in branches" if row.kind == StepKind.PARALLEL else "waiting"
    if item.for_operators:
        whom = "escalated to operators"
    elif item.assigned_user_id is not None:
        whom = f"assigned to {display.person_name(item.assigned_user)}"
    elif item.assigned_group_id is not None:
        whom = f"{item.assigned_group.name} (group)"
    else:
        whom = item.assigned_person or "a person"
    if item.taken_by_id is not None:
        whom += f", taken by {display.person_name(item.taken_by)}"
    return whom


def with_work(organization, rows: list[dict]) -> list[dict]:
    """Add to each run row its steps at work now (`now`: "Review: Managers (group), taken by Ann Lee") and its
    soonest due date (`due`); three queries at most, whatever the number of rows."""
    keys = [pk for pk in (public_pk(row["id"], "r") for row in rows) if pk is not None]
    steps = list(RunStep.objects.filter(run_id__in=keys, state__in=list(ACTIVE_STATES), organization=organization)
                 .exclude(kind=StepKind.PARALLEL).order_by("run_id", "position")) if keys else []
    waiting = [row.pk for row in steps if row.state == StepState.WAITING]
    items = {item.step_id: item for item in WorkItem.objects.filter(step_id__in=waiting, state=WorkItemState.OPEN)
             .select_related("assigned_group", "assigned_user", "taken_by")} if waiting else {}
    names = display.names_for(organization, {row.claimed_by for row in steps if row.claimed_by})
    at_work: dict[int, list] = {}
    for row in steps:
        at_work.setdefault(row.run_id, []).append(row)
    for run in rows:
        here = at_work.get(public_pk(run["id"], "r"), [])
        run["now"] = [f"{step_title(row.step_id)}: {_who(row, items.get(row.pk), names)}" for row in here]
        dues = [row.due_at for row in here if row.due_at]
        run["due"] = min(dues) if dues else None
        run["overdue"] = any(row.overdue for row in here)
    return rows


def sorted_rows(rows: list[dict], sort: str) -> list[dict]:
    """Rows already read (a search's, an attention list's) in the order `sort` names; rows from with_work."""
    if sort == "updated":
        return sorted(rows, key=lambda row: row.get("updatedAt") or row["startedAt"], reverse=True)
    if sort == "due":
        dated = sorted((row for row in rows if row.get("due")), key=lambda row: row["due"])
        return dated + [row for row in rows if not row.get("due")]
    return sorted(rows, key=lambda row: row["startedAt"], reverse=True)
