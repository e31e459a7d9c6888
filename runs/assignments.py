"""Who a work item is assigned to, and the open items assigned to a person: defined here once.

The tools, the inbox pages and the decision rules all ask these; an item is assigned one way only,
to a person, to a group or to the operators (the constraint item_assigned_one_way).
"""

from __future__ import annotations

import datetime as dt

from django.db import connection
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce

from accounts.identity import Identity

from .models import WorkItem, WorkItemState


def may_decide(identity: Identity, item) -> bool:
    """Whether a person is inside an item's assignment: the group, the named person, or operators."""
    if not identity.is_human or identity.user is None:
        return False
    if item.for_operators:
        return identity.is_operator
    if item.assigned_user_id is not None:
        return item.assigned_user_id == identity.user.pk
    return identity.user.process_groups.filter(pk=item.assigned_group_id).exists()


def group_ids(identity: Identity) -> list[int]:
    """The keys of the person's groups in their organization."""
    return list(identity.user.process_groups.filter(organization=identity.organization).values_list("pk", flat=True))


def assigned_parts(identity: Identity, *, operators: bool) -> list:
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


# Later than any due date: items without one come after every item with one.
_NEVER = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)
# The orders a person's open items may be read in: the values each needs, then the order, ties by age.
ORDERS = {
    "age": ({}, ("created_at", "pk")),
    "due": ({"due": Coalesce("step__due_at", Value(_NEVER, output_field=DateTimeField()))},
            ("due", "created_at", "pk")),
    "process": ({"process": F("run__process_name")}, ("process", "created_at", "pk")),
}


class AssignedItems:
    """A person's open items, oldest first (or in another of ORDERS): counted and sliced as a queryset would
    be, for a Paginator.

    A slice reads the keys of its items from every part in one query, then the items themselves with
    `related` joined.
    """

    def __init__(self, parts: list, related=(), order: str = "age") -> None:
        self.parts = parts
        self.related = related
        self.order = order
        self.values, self.columns = ORDERS[order]

    def filter(self, *args, **kwargs) -> AssignedItems:
        return AssignedItems([part.filter(*args, **kwargs) for part in self.parts], self.related, self.order)

    def count(self) -> int:
        first, *rest = [part.values("pk").order_by() for part in self.parts]
        return first.union(*rest, all=True).count() if rest else first.count()

    def __getitem__(self, key: slice) -> list:
        if not isinstance(key, slice) or key.step is not None:
            raise TypeError("AssignedItems takes a slice")
        start, stop = key.start or 0, key.stop
        if stop is not None and stop <= start:
            return []  # (a queryset sliced to nothing counts as empty, and a union drops it)
        keys = [part.annotate(**self.values).values_list(*self.columns) for part in self.parts]
        if len(keys) > 1:
            if stop is not None and connection.features.supports_slicing_ordering_in_compound:
                keys = [part.order_by(*self.columns)[:stop] for part in keys]  # none gives more than the slice needs
            else:
                keys = [part.order_by() for part in keys]
        first, *rest = keys
        ids = [row[-1] for row in (first.union(*rest, all=True).order_by(*self.columns) if rest else first)[start:stop]]
        # Still open: an item decided between the two reads drops out of the page.
        rows = WorkItem.objects.filter(pk__in=ids, state=WorkItemState.OPEN).select_related(*self.related).in_bulk()
        return [rows[pk] for pk in ids if pk in rows]


def assigned_items(identity: Identity, related=()) -> AssignedItems:
    """Open work items whose assignment includes this person, escalations too for an operator."""
    return AssignedItems(assigned_parts(identity, operators=True), related)
