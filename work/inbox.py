"""What a person has to do: their open work items, oldest first (spec §3.4, tools.md get_work)."""

from __future__ import annotations

from django.db.models import Count, Q

from accounts.identity import Identity
from processes.definition import definition_for
from runs import presenting
from runs.engine import snapshot_of
from runs.models import RunStep, StepState

from .models import Notification, WorkItem, WorkItemState


def assigned_items(identity: Identity):
    """Open work items whose assignment includes this person."""
    user = identity.user
    mine = Q(assigned_user=user) | Q(assigned_group__members=user)
    if identity.is_operator:
        mine |= Q(for_operators=True)
    return (
        WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN)
        .filter(mine)
        .distinct()
    )


def person_work(identity: Identity, *, limit: int, cursor: str | None, process: str | None) -> dict:
    items = assigned_items(identity).select_related("run__version", "step")
    if process:
        items = items.filter(run__process_name=process)
    from runs.tools import cursor_after, encode_cursor

    after = cursor_after(cursor)
    if after is not None:
        since, pk = after
        items = items.filter(Q(created_at__gt=since) | Q(created_at=since, pk__gt=pk))
    page = list(items.order_by("created_at", "pk")[: limit + 1])
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
    return {"items": entries, "nextCursor": encode_cursor(last.created_at, last.pk) if last else None}


# --- the inbox page -------------------------------------------------------------------------------


def inbox_items(identity: Identity, *, process: str | None = None):
    """My open work items other than escalations, oldest first, each row's run and step in the same query."""
    items = (
        assigned_items(identity)
        .filter(for_operators=False)
        .select_related("run__version", "step", "assigned_group")
        .order_by("created_at", "pk")
    )
    if process:
        items = items.filter(run__process_name=process)
    return items


def process_counts(identity: Identity) -> list[tuple[str, int]]:
    """How many of my open work items each process has, for the inbox filter; one query."""
    user = identity.user
    rows = (
        WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN, for_operators=False)
        .filter(Q(assigned_user=user) | Q(assigned_group__members=user))
        .values("run__process_name")
        .annotate(n=Count("pk", distinct=True))
        .order_by("run__process_name")
    )
    return [(row["run__process_name"], row["n"]) for row in rows]


def escalation_queue(identity: Identity):
    """The organization's escalated agent steps, oldest first; empty for anyone but an operator."""
    if not identity.is_operator:
        return WorkItem.objects.none()
    return (
        WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN, for_operators=True)
        .select_related("run__version", "step")
        .order_by("created_at", "pk")
    )


def overdue_work(identity: Identity, *, limit: int = 50) -> tuple[list, list]:
    """Overdue work across the organization for operators: open work items, and agent steps nobody finished."""
    if not identity.is_operator:
        return [], []
    items = list(
        WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN, step__overdue=True)
        .select_related("run__version", "step", "assigned_group")
        .order_by("step__due_at", "pk")[:limit]
    )
    steps = list(
        RunStep.objects.filter(
            organization=identity.organization,
            kind="agent",
            overdue=True,
            state__in=(StepState.READY, StepState.CLAIMED),
        )
        .select_related("run__version")
        .order_by("due_at", "pk")[:limit]
    )
    return items, steps


def notifications_for(identity: Identity, *, limit: int = 20) -> tuple[list, int]:
    """My newest in-app notices and how many are unread."""
    notices = Notification.objects.filter(user=identity.user, run__organization=identity.organization)
    unread = notices.filter(read_at__isnull=True).count()
    return list(notices.select_related("run", "work_item").order_by("-created_at", "-pk")[:limit]), unread
