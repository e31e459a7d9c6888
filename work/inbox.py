"""What a person has to do: their open work items, oldest first (spec §3.4, tools.md get_work)."""

from __future__ import annotations

import base64
import json

from django.db.models import Q

from accounts.identity import Identity
from processes.definition import definition_for
from runs import presenting
from runs.engine import snapshot_of
from runs.errors import Invalid

from .models import WorkItem, WorkItemState


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
    if cursor is not None:
        try:
            after = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            items = items.filter(pk__gt=int(after[0]))
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise Invalid("The cursor is not one this server gave out.", ["cursor: not recognised"]) from exc
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
    next_cursor = None
    if len(page) > limit:
        next_cursor = base64.urlsafe_b64encode(json.dumps([page[limit - 1].pk]).encode()).decode().rstrip("=")
    return {"items": entries, "nextCursor": next_cursor}
