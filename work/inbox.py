"""What a person has to do: their open work items, oldest first (spec §3.4, tools.md get_work)."""

from __future__ import annotations

from collections import Counter

from django.db import connection
from django.db.models import Count, F, Q

from accounts.identity import Identity
from processes.definition import definition_for
from runs import presenting
from runs.engine import snapshot_of
from runs.models import OVERDUE_NOW, Run, RunStep, StepState

from .models import Notification, WorkItem, WorkItemState


def group_ids(identity: Identity) -> list[int]:
    """The keys of the person's groups in their organization."""
    return list(identity.user.process_groups.filter(organization=identity.organization).values_list("pk", flat=True))


def _parts(identity: Identity, *, operators: bool) -> list:
    """A person's open items, one queryset for each way an item is assigned: to them, to their groups,
    to the operators.

    An item is assigned one way only (the constraint item_assigned_one_way), so no item is in two
    parts. Each part is read by an index of its own in the order items were opened; as one look, with
    the groups joined or or-ed, the database may read every open item of the organization in that
    order to test each one's assignment.
    """
    # The organization is checked on the rows a person's or a group's index finds, never looked up by
    # (`+ 0`): a plan made while the table was small could otherwise read the organization's open items.
    mine = WorkItem.objects.alias(in_organization=F("organization_id") + 0).filter(
        in_organization=identity.organization.pk, state=WorkItemState.OPEN
    )
    parts = [mine.filter(assigned_user=identity.user)]
    groups = group_ids(identity)
    if groups:
        parts.append(mine.filter(assigned_group_id__in=groups))
    if operators and identity.is_operator:
        parts.append(
            WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN, for_operators=True)
        )
    return parts


class AssignedItems:
    """A person's open items, oldest first: counted and sliced as a queryset would be, for a Paginator.

    A slice reads the keys of its items from every part in one query, then the items themselves with
    `related` joined.
    """

    ORDER = ("created_at", "pk")

    def __init__(self, parts: list, related=()) -> None:
        self.parts = parts
        self.related = related

    def filter(self, *args, **kwargs) -> AssignedItems:
        return AssignedItems([part.filter(*args, **kwargs) for part in self.parts], self.related)

    def count(self) -> int:
        first, *rest = [part.values("pk").order_by() for part in self.parts]
        return first.union(*rest, all=True).count() if rest else first.count()

    def __getitem__(self, key: slice) -> list:
        if not isinstance(key, slice) or key.step is not None:
            raise TypeError("AssignedItems takes a slice")
        start, stop = key.start or 0, key.stop
        if stop is not None and stop <= start:
            return []  # (a queryset sliced to nothing counts as empty, and a union drops it)
        keys = [part.values_list(*self.ORDER) for part in self.parts]
        if len(keys) > 1:
            if stop is not None and connection.features.supports_slicing_ordering_in_compound:
                keys = [part.order_by(*self.ORDER)[:stop] for part in keys]  # none gives more than the slice needs
            else:
                keys = [part.order_by() for part in keys]
        first, *rest = keys
        ids = [pk for _at, pk in (first.union(*rest, all=True).order_by(*self.ORDER) if rest else first)[start:stop]]
        # Still open: an item decided between the two reads drops out of the page.
        rows = WorkItem.objects.filter(pk__in=ids, state=WorkItemState.OPEN).select_related(*self.related).in_bulk()
        return [rows[pk] for pk in ids if pk in rows]


def assigned_items(identity: Identity, related=()) -> AssignedItems:
    """Open work items whose assignment includes this person, escalations too for an operator."""
    return AssignedItems(_parts(identity, operators=True), related)


def person_work(identity: Identity, *, limit: int, cursor: str | None, process: str | None) -> dict:
    items = assigned_items(identity, ("run__version", "step"))
    if process:
        items = items.filter(run__process_name=process)
    from runs.tools import cursor_after, encode_cursor

    after = cursor_after(cursor)
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
    return {"items": entries, "nextCursor": encode_cursor(last.created_at, last.pk) if last else None}


# --- the inbox page -------------------------------------------------------------------------------


def inbox_items(identity: Identity, *, process: str | None = None):
    """My open work items other than escalations, oldest first, each with its run and step."""
    items = AssignedItems(_parts(identity, operators=False), ("run__version", "step", "assigned_group"))
    if process:
        items = items.filter(run__process_name=process)
    return items


def process_counts(identity: Identity) -> list[tuple[str, int]]:
    """How many of my open work items each process has, for the inbox filter; a query for each part."""
    counts: Counter = Counter()
    for part in _parts(identity, operators=False):
        counts.update(dict(part.values_list("run__process_name").annotate(n=Count("pk")).order_by()))
    return sorted(counts.items())


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
        .select_related("run__version", "step", "assigned_group")
        .order_by("step__due_at", "pk")[:limit]
    ) if waiting else []
    steps = list(late.filter(kind="agent", state__in=(StepState.READY, StepState.CLAIMED)).order_by("due_at", "pk")[:limit])
    for row in steps:  # what the page shows of the run, which the step carries
        row.run = Run(pk=row.run_id, organization_id=row.organization_id, process_name=row.process_name,
                      version_id=row.version_id, mode=row.mode)
    return items, steps


def notifications_for(identity: Identity, *, limit: int = 20) -> tuple[list, int]:
    """My newest in-app notices and how many are unread."""
    notices = Notification.objects.filter(user=identity.user, run__organization=identity.organization)
    unread = notices.filter(read_at__isnull=True).count()
    return list(notices.select_related("run", "work_item").order_by("-created_at", "-pk")[:limit]), unread
