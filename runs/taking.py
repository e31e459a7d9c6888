"""Who is on a work item: a person takes an open item ("I'm working on this") and lets it go.

A take tells colleagues, it never locks: the spec lets anyone in an item's assignment decide, and the
first decision wins (spec §3.4). Taking an item someone else holds takes it over, which the pages ask
the person to confirm. Every take is kept (ItemTake) for the run's timeline.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.identity import Identity

from .assignments import may_decide
from .errors import Conflict, Forbidden
from .models import ItemTake, WorkItem, WorkItemState


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
    if let_go:
        item.taken_by_id, item.taken_at = None, None
    return bool(let_go)


def _check_may_take(identity: Identity, item: WorkItem) -> None:
    if not may_decide(identity, item):
        raise Forbidden("Only people this item is assigned to can take it.")
    if item.assigned_user_id is not None:
        raise Conflict("This item is assigned to you alone; there is nobody to tell.")


def takes_of(items) -> list[ItemTake]:
    """Every take of these items, oldest first, with who took them."""
    return list(ItemTake.objects.filter(item__in=items).select_related("user", "taken_over_by", "item__step"))


def refs(takes: list[ItemTake]) -> set[str]:
    """The refs of everyone named in these takes, for the page to name them."""
    return {take.user.ref for take in takes} | {take.taken_over_by.ref for take in takes if take.taken_over_by}
