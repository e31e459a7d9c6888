"""Whole days of passages counted once (PassageDay), so a live map over a month reads a few hundred rows.

A day is counted once it is over (by MARGIN, so a write that took its time has committed): by the
sweep, once a day, for every version; or by the first read of a version's map, if that comes first. Each count keeps the band of durations its passages fell in,
5% wide (`bucket`), from which a period's percentiles are worked out within that much.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter, defaultdict

from django.db import transaction

from processes.models import ProcessVersion

from .models import Passage, PassageDay, PassagesRolled

RATIO = 1.05
MARGIN = dt.timedelta(minutes=10)
KEPT_DAYS = 31  # the longest period a map shows, and the day it starts in


def bucket(seconds: float | None) -> int | None:
    """The band of durations a time falls in: 0 under a second, then each band 5% wider than the last."""
    if seconds is None:
        return None
    if seconds < 1:
        return 0
    return math.ceil(math.log(seconds) / math.log(RATIO))


def bucket_value(band: int) -> float:
    """The time that stands for a band: its middle, on the scale the bands grow by."""
    return 0.5 if band == 0 else RATIO ** (band - 0.5)


def day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def countable_until(now: dt.datetime) -> dt.date:
    """The first day (UTC) not yet over long enough to be counted."""
    return (now - MARGIN).astimezone(dt.UTC).date()


class _Swept:
    until: dt.date | None = None  # the day this process's sweep last counted up to


def roll_up_every_version(*, now: dt.datetime) -> int:
    """Count the days just over for every version (the sweep calls it; it works once a day per process)."""
    until = countable_until(now)
    if _Swept.until == until:
        return 0
    counted = 0
    for version_id, organization_id in ProcessVersion.objects.values_list("pk", "process__organization_id"):
        counted += roll_up(organization_id, version_id, now=now) == until
    _Swept.until = until
    return counted


def roll_up(organization_id: int, version_id: int, *, now: dt.datetime) -> dt.date:
    """Count the version's passages of every whole day not yet counted; return the first day left uncounted."""
    until = countable_until(now)
    done = PassagesRolled.objects.filter(version_id=version_id).values_list("until", flat=True).first()
    if done is not None and done >= until:
        return done
    # get_or_create finds the mark another reader made meanwhile; the lock then lets one of them count.
    PassagesRolled.objects.get_or_create(
        version_id=version_id,
        defaults={"organization_id": organization_id, "until": until - dt.timedelta(days=KEPT_DAYS)},
    )
    with transaction.atomic():
        mark = PassagesRolled.objects.select_for_update().get(version_id=version_id)
        if mark.until < until:
            _count_days(organization_id, version_id, max(mark.until, until - dt.timedelta(days=KEPT_DAYS)), until)
            mark.until = until
            mark.save(update_fields=["until"])
        return mark.until


def _count_days(organization_id: int, version_id: int, start: dt.date, until: dt.date) -> None:
    found = Passage.objects.filter(
        organization_id=organization_id, version_id=version_id, at__gte=day_start(start), at__lt=day_start(until)
    ).values_list("at", "step_id", "how", "went_to", "outcome", "seconds")
    counts: Counter = Counter()
    times: dict[tuple, Counter] = defaultdict(Counter)
    for at, step_id, how, went_to, outcome, seconds in found.iterator(chunk_size=5000):
        key = (at.astimezone(dt.UTC).date(), step_id, how, went_to, outcome)
        counts[key] += 1
        if seconds is not None:
            times[key][str(bucket(seconds))] += 1
    PassageDay.objects.bulk_create(
        [PassageDay(organization_id=organization_id, version_id=version_id, day=day, step_id=step_id, how=how,
                    went_to=went_to, outcome=outcome, count=count, times=dict(times[key]) if key in times else None)
         for key, count in counts.items() for day, step_id, how, went_to, outcome in [key]],
        batch_size=2000,
    )
