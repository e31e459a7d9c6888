"""What the inbox page shows a person: their open items, escalations, overdue work and notices (spec §3.4)."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count
from django.urls import reverse

from accounts.identity import Identity
from processes.kinds import StepKind
from runs.assignments import AssignedItems, assigned_parts
from runs.models import OVERDUE_NOW, Notification, Run, RunStep, StepState, WorkItem, WorkItemState

# --- the inbox page -------------------------------------------------------------------------------


# The inbox's views of my work: (key, label). "Unassigned" is my groups' items nobody has taken.
SHOWS = (("", "All"), ("mine", "Assigned to me"), ("groups", "My groups'"), ("taken", "Taken by me"),
         ("unassigned", "Nobody on it"))
# The orders the inbox offers: (key, label), the first the default (runs.assignments.ORDERS).
SORTS = (("age", "Oldest first"), ("due", "Due soonest"), ("process", "By process"))


def sort_key(value: str | None) -> str:
    """The inbox order asked for, or the default for anything else."""
    return value if value in dict(SORTS) else SORTS[0][0]


def inbox_items(identity: Identity, *, process: str | None = None, show: str = "", sort: str = "age"):
    """My open work items other than escalations, oldest first or as sorted, each with its run, step and who took it."""
    mine, *groups = assigned_parts(identity, operators=False)
    # "Assigned to me": the items named for me, and my groups' items a colleague handed me.
    handed = [part.filter(handed_to=identity.user) for part in groups]
    parts = {"mine": [mine, *handed], "groups": groups, "unassigned": groups}.get(show, [mine, *groups])
    items = AssignedItems(parts or [mine.none()], ("run__version", "step", "assigned_group", "taken_by", "handed_to"),
                          sort_key(sort))
    if show == "taken":
        items = items.filter(taken_by=identity.user)
    elif show == "unassigned":
        items = items.filter(taken_by__isnull=True)
    if process:
        items = items.filter(run__process_name=process)
    return items


def process_counts(identity: Identity) -> list[tuple[str, int]]:
    """How many of my open work items each process has, for the inbox filter; a query for each part."""
    counts: Counter = Counter()
    for part in assigned_parts(identity, operators=False):
        counts.update(dict(part.values_list("run__process_name").annotate(n=Count("pk")).order_by()))
    return sorted(counts.items())


def escalation_queue(identity: Identity):
    """The organization's escalated agent steps, oldest first; empty for anyone but an operator."""
    if not identity.is_operator:
        return WorkItem.objects.none()
    return (
        WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN, for_operators=True)
        .select_related("run__version", "step", "taken_by")
        .order_by("created_at", "pk")
    )


def overdue_work(identity: Identity, *, limit: int = 50) -> tuple[list, list]:
    """Overdue work across the organization for operators: open work items, and agent steps nobody finished.

    Both start from the steps overdue now (the partial index step_overdue_now), not from every open item.
    An open item's step waits for it: a person's step, or an agent step escalated to the operators.
    """
    if not identity.is_operator:
        return [], []
    late = RunStep.objects.filter(OVERDUE_NOW, organization=identity.organization)
    waiting = list(late.filter(state=StepState.WAITING).order_by("due_at", "pk").values_list("pk", flat=True)[:limit])
    items = list(
        WorkItem.objects.filter(step_id__in=waiting, state=WorkItemState.OPEN)
        .select_related("run__version", "step", "assigned_group", "taken_by")
        .order_by("step__due_at", "pk")[:limit]
    ) if waiting else []
    steps = list(late.filter(kind=StepKind.AGENT, state__in=(StepState.READY, StepState.CLAIMED)).order_by("due_at", "pk")[:limit])
    for row in steps:  # what the page shows of the run, which the step carries
        row.run = Run(pk=row.run_id, organization_id=row.organization_id, process_name=row.process_name,
                      version_id=row.version_id, mode=row.mode)
    return items, steps


def notifications_for(identity: Identity, *, limit: int = 20) -> tuple[list, int]:
    """My newest in-app notices and how many are unread.

    Read by the person's own indexes alone, the runs and items after by their keys: a join planned
    while the tables were small (and kept by a prepared statement) could read every run. A person's
    notices are all of their organization's (runs.notices.forget_other_organizations).
    """
    notices = Notification.objects.filter(user=identity.user)
    unread = notices.filter(read_at__isnull=True).count()
    newest = notices.order_by("-created_at", "-pk").prefetch_related("run", "work_item")[:limit]
    return list(newest), unread


# --- where a notice points ------------------------------------------------------------------------


def notice_link(notice: Notification) -> str:
    """The page a notice points at: its work item (which says who decided it, once closed), else its run."""
    if notice.work_item_id is not None:
        return reverse("item", args=[f"w_{notice.work_item_id}"])
    return reverse("run", args=[notice.run.public_id])


def inbox_link() -> str:
    return reverse("inbox")
