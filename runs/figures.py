"""The live map's figures for one process version: where its runs are now, and how they went in a period.

Every figure comes from an aggregate over an index, never from run data, and counts live runs only
(test runs leave no passages, and their steps are left out): the steps at work now from step_active_now; the passages of whole days from their daily counts (runs.rollups), the rest of the
period from passage_map. Percentiles are worked out here from the times and the counted bands.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.utils import timezone

from base import sql
from processes.definition import JOIN, Definition
from processes.kinds import StepKind

from . import rollups
from .models import ACTIVE_STATES, How, Mode, Passage, PassageDay, RunStep

# The periods a person may choose: (key, words, length).
PERIODS = (
    ("24h", "the last 24 hours", dt.timedelta(hours=24)),
    ("7d", "the last 7 days", dt.timedelta(days=7)),
    ("30d", "the last 30 days", dt.timedelta(days=30)),
)
DEFAULT_PERIOD = "7d"
# Passages that time a step: each one ends a stay in it (for a finish, the whole run).
TIMED = (How.PASSED, How.REJECTED, How.FAILED, How.FINISHED)


def period_problem(key: str) -> str | None:
    """What is wrong with a chosen period, or None."""
    if key in {k for k, _words, _length in PERIODS}:
        return None
    return f"period: '{key[:40]}' is not one of {', '.join(k for k, _w, _l in PERIODS)}"


def period_start(key: str, now: dt.datetime | None = None) -> dt.datetime:
    length = next(length for k, _words, length in PERIODS if k == key)
    return (now or timezone.now()) - length


def period_words(key: str) -> str:
    return next(words for k, words, _length in PERIODS if k == key)


@dataclass
class StepFigures:
    """One step's figures: runs at it now by state, how runs ended there, and its times."""

    now: Counter = field(default_factory=Counter)  # ready, claimed, waiting, overdue
    ended: Counter = field(default_factory=Counter)  # outcome: how many runs ended at this step
    median: float | None = None
    p90: float | None = None
    timed: int = 0

    @property
    def at_work(self) -> int:
        return self.now["ready"] + self.now["claimed"] + self.now["waiting"]


@dataclass
class MapFigures:
    steps: dict[str, StepFigures]
    # (source, target, "forward" | "reject") → passages along that edge in the period, as processes.maps names edges.
    edges: Counter


def percentile_of(counted: list[tuple[float, int]], fraction: float) -> float:
    """The value at `fraction` of values given with their counts, between neighbours as PostgreSQL's
    percentile_cont gives it."""
    ordered = sorted(counted)
    total = sum(count for _value, count in ordered)
    position = fraction * (total - 1)
    low = math.floor(position)

    def value_at(index: int) -> float:
        seen = 0
        for value, count in ordered:
            seen += count
            if index < seen:
                return value
        return ordered[-1][0]

    below, above = value_at(low), value_at(min(low + 1, total - 1))
    return below + (above - below) * (position - low)


def percentile_cont(ordered: list[float], fraction: float) -> float:
    """The value at `fraction` of plain values (each counted once)."""
    return percentile_of([(value, 1) for value in ordered], fraction)


def _quoted(values) -> str:
    return ", ".join(f"'{value}'" for value in values)


def _now_query(organization_id: int, version_id: int) -> tuple[str, list]:
    # The active states written out: the partial index step_active_now applies to a plan that sees them.
    return (
        f"SELECT step_id, state, overdue, COUNT(*) FROM {RunStep._meta.db_table}"
        f" WHERE organization_id = %s AND version_id = %s AND state IN ({_quoted(ACTIVE_STATES)})"
        f" AND mode = '{Mode.LIVE}' GROUP BY step_id, state, overdue",
        [organization_id, version_id],
    )


def _raw(columns: str, where: str, organization_id: int, version_id: int, head: tuple, tail) -> tuple[str, list]:
    """The passages of two stretches of time not counted by day: each a range of the index passage_map."""
    table = Passage._meta.db_table
    one = f"SELECT {columns} FROM {table} WHERE organization_id = %s AND version_id = %s{where}"
    return (
        f"{one} AND at >= %s AND at < %s UNION ALL {one} AND at >= %s",
        [organization_id, version_id, *head, organization_id, version_id, tail],
    )


def _raw_counts(organization_id, version_id, head, tail) -> tuple[str, list]:
    text, params = _raw("step_id, how, went_to, outcome", "", organization_id, version_id, head, tail)
    return f"SELECT step_id, how, went_to, outcome, COUNT(*) FROM ({text}) p GROUP BY step_id, how, went_to, outcome", params


def _raw_times(organization_id, version_id, head, tail) -> tuple[str, list]:
    return _raw("step_id, seconds", f" AND how IN ({_quoted(TIMED)}) AND seconds IS NOT NULL",
                organization_id, version_id, head, tail)


def _day_counts(organization_id: int, version_id: int, first: dt.date, until: dt.date) -> tuple[str, list]:
    return (
        f"SELECT step_id, how, went_to, outcome, count, times FROM {PassageDay._meta.db_table}"
        " WHERE organization_id = %s AND version_id = %s AND day >= %s AND day < %s",
        [organization_id, version_id, first, until],
    )


def _stretches(since: dt.datetime, counted_until: dt.date) -> tuple[dt.date, dt.date, tuple, dt.datetime]:
    """Which whole days to read as counted, and the two stretches around them to read passage by passage."""
    first = since.astimezone(dt.UTC).date() + dt.timedelta(days=1)
    if first >= counted_until:  # no whole day counted inside the period: read all of it as it is
        return first, first, (since, since), since
    return first, counted_until, (since, rollups.day_start(first)), rollups.day_start(counted_until)


def edge_of(definition: Definition, step_id: str, how: str, went_to: str) -> tuple[str, str, str] | None:
    """The map edge a passage went along, named as processes.maps names it; None for one the map does not draw."""
    if step_id not in definition.by_id:
        return None
    if how == How.REJECTED:
        return step_id, went_to, "reject"
    step = definition[step_id]
    # A parallel step goes on from its join bar; a branch's last step goes to that bar.
    source = f"{JOIN}:{step_id}" if step.kind == StepKind.PARALLEL else step_id
    target = f"{JOIN}:{step.branch}" if went_to == JOIN else went_to
    return source, target, "forward"


def _count(steps, edges: Counter, definition: Definition, step_id, how, went_to, outcome, count) -> None:
    if how in (How.PASSED, How.REJECTED) and went_to:
        edge = edge_of(definition, step_id, how, went_to)
        if edge is not None:
            edges[edge] += count
    elif how in (How.FAILED, How.FINISHED) and step_id:
        steps[step_id].ended[outcome or ""] += count


def map_figures(organization_id: int, version, definition: Definition, since: dt.datetime,
                now: dt.datetime | None = None) -> MapFigures:
    """Where the version's runs are now, and their passages and step times since `since`.

    Whole days come counted (runs.rollups); the stretches before and after them are read passage by
    passage. The four reads go in one round trip on PostgreSQL.
    """
    now = now or timezone.now()
    counted_until = rollups.roll_up(organization_id, version.pk, now=now)
    first, until, head, tail = _stretches(since, counted_until)
    now_rows, raw_counts, raw_times, day_rows = sql.fetch_many([
        _now_query(organization_id, version.pk),
        _raw_counts(organization_id, version.pk, head, tail),
        _raw_times(organization_id, version.pk, head, tail),
        _day_counts(organization_id, version.pk, first, until),
    ])
    steps: dict[str, StepFigures] = defaultdict(StepFigures)
    for step_id, state, overdue, count in now_rows:
        steps[step_id].now[state] += count
        if overdue:
            steps[step_id].now["overdue"] += count
    edges: Counter = Counter()
    times: dict[str, Counter] = defaultdict(Counter)
    for step_id, how, went_to, outcome, count in raw_counts:
        _count(steps, edges, definition, step_id, how, went_to, outcome, count)
    for step_id, seconds in raw_times:
        times[step_id][seconds] += 1
    for step_id, how, went_to, outcome, count, bands in day_rows:
        _count(steps, edges, definition, step_id, how, went_to, outcome, count)
        if bands and how in TIMED:
            for band, many in (json.loads(bands) if isinstance(bands, str) else bands).items():
                times[step_id][rollups.bucket_value(int(band))] += many
    for step_id, counted in times.items():
        pairs = list(counted.items())
        figures = steps[step_id]
        figures.median, figures.p90 = percentile_of(pairs, 0.5), percentile_of(pairs, 0.9)
        figures.timed = sum(counted.values())
    return MapFigures(steps=dict(steps), edges=edges)


def runs_at_step(organization_id: int, version_id: int, step_id: str, *, limit: int = 50) -> list[RunStep]:
    """The rows of the version's runs at `step_id` now, the longest there first."""
    where = (
        f"t.organization_id = %s AND t.version_id = %s AND t.step_id = %s AND t.state IN ({_quoted(ACTIVE_STATES)})"
        f" AND t.mode = '{Mode.LIVE}'"
    )
    return sql.select(RunStep, where, [organization_id, version_id, step_id],
                      suffix=f"ORDER BY t.ready_since, t.id LIMIT {int(limit)}")
