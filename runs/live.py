"""Change stamps: what lets an open page learn, cheaply and on any app node, that something it shows changed.

Every write a person could see on another page touches the stamps of whoever sees it, after its commit:
a person (their notices), a group or an organization's operators (their items: new, taken, handed over,
commented on, decided), one work item and one run (their pages). A stamp is a short random token in the
shared cache (settings.LIVE_CACHE), so every node reads the same one. A page polls with the stamp it
was rendered with; an unchanged stamp costs one cache read, and a query only once this process's memory
of the person's groups (WHO_SECONDS) has run out.

A run page's stamp also holds the run's `revision`, which every save of the run moves (runs.store): so
an agent's claim, renewal or submission, the commonest writes, reach an open run page without writing
to the cache at all, and its poll reads the one row by its key. The run's cache stamp is touched by
what changes its page without saving the run (a comment, a work item taken or handed over), and,
with its audience's, when a save opens or closes a work item.

A stamp the cache lost is made anew, which only costs each page watching it one refresh. A cache that
cannot be reached gives no stamp at all (None): the pages then refresh at a slow pace instead, and
for RESTING_SECONDS this process does not try it again, so no write waits on it.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time

from django.conf import settings
from django.core.cache import caches

from base import sql

from .models import Run

log = logging.getLogger(__name__)

KEEP_SECONDS = 7 * 24 * 3600
WHO_SECONDS = 60  # how long a process remembers a person's groups for their polls


# After the cache fails once, this process leaves it alone this long: a write never waits on a cache
# that is down, and the pages meanwhile refresh slowly.
RESTING_SECONDS = 10
_resting_until = 0.0


def _cache():
    if time.monotonic() < _resting_until:
        raise ConnectionError("the live cache failed a moment ago")
    return caches[settings.LIVE_CACHE]


def _failed() -> None:
    global _resting_until
    _resting_until = time.monotonic() + RESTING_SECONDS


def person(user_id: int) -> str:
    return f"live:u:{user_id}"


def group(group_id: int) -> str:
    return f"live:g:{group_id}"


def operators(organization_id: int) -> str:
    return f"live:o:{organization_id}"


def item(organization_id: int, item_id: int) -> str:
    return f"live:i:{organization_id}:{item_id}"


def run(organization_id: int, run_id: int) -> str:
    return f"live:r:{organization_id}:{run_id}"


def audience(work_item) -> list[str]:
    """The stamps of those who see a work item in their inbox, and of its own page and its run's."""
    organization = work_item.organization_id
    if work_item.for_operators:
        seen_by = operators(organization)
    elif work_item.assigned_group_id is not None:
        seen_by = group(work_item.assigned_group_id)
    else:
        seen_by = person(work_item.assigned_user_id)
    return [seen_by, item(organization, work_item.pk), run(organization, work_item.run_id)]


def touch(*keys: str) -> None:
    """Give these stamps new tokens once the current write is applied (at once outside one)."""
    keys = tuple(dict.fromkeys(keys))
    if keys:
        sql.on_commit(lambda: _renew(keys))


def _renew(keys) -> None:
    try:
        token = secrets.token_hex(6)  # new for every stamp the write touches: each one moves
        _cache().set_many(dict.fromkeys(keys, token), KEEP_SECONDS)
    except Exception as exc:  # a cache outage costs liveness only; the pages poll slowly until it is back
        _failed()
        log.warning("live: could not renew %d change stamps: %s: %s", len(keys), type(exc).__name__, exc)


def stamp(keys: list[str], *, run: tuple[int, int] | None = None) -> str | None:
    """One token for all these stamps together, and for the revision of `run` ((organization, key),
    for its page); None when the cache cannot be reached."""
    try:
        cache = _cache()
        found = cache.get_many(keys)
        missing = {key: secrets.token_hex(6) for key in keys if key not in found}
        if missing:
            for key, token in missing.items():
                cache.add(key, token, KEEP_SECONDS)  # a node that made one a moment earlier keeps its own
            found.update(cache.get_many(list(missing)))
    except Exception as exc:
        _failed()
        log.warning("live: could not read change stamps: %s: %s", type(exc).__name__, exc)
        return None
    joined = "|".join(f"{key}={found.get(key, '')}" for key in keys)
    if run is not None:
        joined += f"|revision={revision(*run)}"
    return hashlib.blake2s(joined.encode(), digest_size=8).hexdigest()


def revision(organization_id: int, run_pk: int) -> int | None:
    """The run's revision, which every save of it moves; None for no such run in the organization."""
    return Run.objects.filter(pk=run_pk, organization_id=organization_id).values_list("revision", flat=True).first()


_known: dict = {}


def who(user, load, *, fresh: bool = False) -> dict | None:
    """A person's organization, operator flag and groups, remembered a minute by this process, so a poll
    costs one cache round trip; `load()` reads them afresh (always, when `fresh`)."""
    # Named by when the account was made too: an account made anew under a reused key is someone else.
    key = (user.pk, user.date_joined)
    now = time.monotonic()
    known = _known.get(key)
    if known is not None and known[0] > now and not fresh:
        return known[1]
    found = load()
    if len(_known) > 50_000:
        _known.clear()
    _known[key] = (now + WHO_SECONDS, found)
    return found
