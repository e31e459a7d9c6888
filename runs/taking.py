"""Who is on a work item: a person takes an open item ("I'm working on this") and lets it go, or a member
of the assignment puts a named colleague on it ("assigned to …").

A take or a hand-over tells colleagues, it never locks: the spec lets anyone in an item's assignment
decide, and the first decision wins (spec §3.4). Taking an item someone else holds takes it over, which
the pages ask the person to confirm. Every take and hand-over is kept (ItemTake, ItemHandover) for the
run's timeline.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.identity import Identity
from accounts.members import active_members
from base.storable import text_problem

from . import live, notices
from .assignments import may_decide
from .errors import Conflict, Forbidden, Invalid
from .models import ItemHandover, ItemTake, WorkItem, WorkItemState


def take(identity: Identity, item: WorkItem, *, holder_seen: int | None) -> bool:
    """Take an open item for this person; return False when they already held it.

    `holder_seen` is who held it when the person chose (None: nobody). Someone else taking it in the
    meantime is a Conflict, so nobody takes an item over without having seen who holds it.
    """
    _check_may_take(identity, item)
    me = identity.user.pk
    now = timezone.now()
    with transaction.atomic():
        current = WorkItem.objects.select_for_update().filter(pk=item.pk).values("state", "taken_by_id").first()
        if current is None or current["state"] != WorkItemState.OPEN:
            raise Conflict("This item is no longer open: it was decided or the run moved on.")
        holder = current["taken_by_id"]
        if holder == me:
            return False
        if holder != holder_seen:
            raise Conflict("Someone else took this item a moment ago; look at who holds it before taking it over.")
        WorkItem.objects.filter(pk=item.pk).update(taken_by_id=me, taken_at=now)
        if holder is not None:
            ItemTake.objects.filter(item_id=item.pk, released_at__isnull=True).update(
                released_at=now, taken_over_by_id=me
            )
        ItemTake.objects.create(item_id=item.pk, user_id=me, taken_at=now)
        live.touch(*live.audience(item))
    item.taken_by_id, item.taken_at = me, now
    return True


def release(identity: Identity, item: WorkItem) -> bool:
    """Let go of an item this person holds; return False when they did not hold it."""
    _check_may_take(identity, item)
    now = timezone.now()
    with transaction.atomic():
        let_go = WorkItem.objects.filter(pk=item.pk, taken_by_id=identity.user.pk).update(taken_by=None, taken_at=None)
        if let_go:
            ItemTake.objects.filter(item_id=item.pk, user_id=identity.user.pk, released_at__isnull=True).update(
                released_at=now
            )
            live.touch(*live.audience(item))
    if let_go:
        item.taken_by_id, item.taken_at = None, None
    return bool(let_go)


def hand(identity: Identity, item: WorkItem, *, email: str) -> bool:
    """Put the colleague `email` names on an open item, and tell them; return False when they already were.

    The colleague must be inside the item's assignment (a member of its group, or an operator for an
    escalation), so they could decide it themselves.
    """
    if not may_hand(identity, item):
        raise Forbidden("Only people this item is assigned to, and the operators, can assign it to a colleague.")
    if item.assigned_user_id is not None:
        raise Conflict("This item is assigned to one person already; there is nobody to hand it to.")
    email = (email or "").strip()[:254]
    if problem := text_problem(email):
        raise Invalid("Choose a colleague who could decide this item.", [f"person: {problem}"])
    people = active_members(identity.organization.pk)
    if item.for_operators:
        people, within = people.filter(membership__is_operator=True), "the operators"
    else:
        people, within = people.filter(process_groups=item.assigned_group_id), f"the group {item.assigned_group.name}"
    to = people.filter(email__iexact=email).first() if email else None
    if to is None:
        raise Invalid("Choose a colleague who could decide this item.",
                      [f"person: '{email}' is not one of {within}" if email else "person: required: choose a colleague"])
    now = timezone.now()
    with transaction.atomic():
        changed = WorkItem.objects.filter(pk=item.pk, state=WorkItemState.OPEN).exclude(handed_to=to).update(
            handed_to=to)
        if not changed:
            if not WorkItem.objects.filter(pk=item.pk, state=WorkItemState.OPEN).exists():
                raise Conflict("This item is no longer open: it was decided or the run moved on.")
            return False
        ItemHandover.objects.create(item_id=item.pk, to=to, by=identity.user, at=now)
        owed = notices.record_handover(item=item, to=to, by=identity.user, now=now)
        live.touch(*live.audience(item), live.person(to.pk))
        if owed:
            run_id = item.run_id
            transaction.on_commit(lambda: notices.send_pending_email(run_id=run_id))
    item.handed_to = to
    return True


def may_hand(identity: Identity, item: WorkItem) -> bool:
    """Whether a person may put a colleague on an item: anyone in its assignment, and the operators."""
    return may_decide(identity, item) or (identity.is_human and identity.is_operator)


def _check_may_take(identity: Identity, item: WorkItem) -> None:
    if not may_decide(identity, item):
        raise Forbidden("Only people this item is assigned to can take it.")
    if item.assigned_user_id is not None:
        raise Conflict("This item is assigned to you alone; there is nobody to tell.")


def takes_of(items) -> list[ItemTake]:
    """Every take of these items, oldest first, with who took them."""
    return list(ItemTake.objects.filter(item__in=items).select_related("user", "taken_over_by", "item__step"))


def handovers_of(items) -> list[ItemHandover]:
    """Every hand-over of these items, oldest first, with who handed them to whom."""
    return list(ItemHandover.objects.filter(item__in=items).select_related("to", "by", "item__step"))


def refs(takes: list[ItemTake], handovers=()) -> set[str]:
    """The refs of everyone named in these takes and hand-overs, for the page to name them."""
    return ({take.user.ref for take in takes} | {take.taken_over_by.ref for take in takes if take.taken_over_by}
            | {h.to.ref for h in handovers} | {h.by.ref for h in handovers})
