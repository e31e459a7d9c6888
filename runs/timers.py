"""Apply what time alone changes: ended leases, passed waits, timeouts and deadlines (spec §3.3, §3.6).

The sweep (Celery beat, or a thread under `make run`) and every read that lists work call the
same catch-up a write does, so nothing is ever wrong because a timer has not fired yet.
"""

from __future__ import annotations

import logging
import threading

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from accounts import connections, grants
from base import backend, metrics, sending, sql

from . import engine, notices, rollups
from .models import Run

log = logging.getLogger(__name__)


def _catch_up_one(run_id: int) -> bool:
    # Each run's own clock: a run caught up after others must not be stamped with an earlier time.
    now = timezone.now()
    with transaction.atomic():
        locked = Run.objects.select_for_update(skip_locked=True).filter(pk=run_id, wake_at__lte=now)
        if connection.features.has_select_for_update_skip_locked and not locked.exists():
            return False
        txn = engine.load_for_write(run_id, now=now)
        if txn.run.is_over:
            return False
        engine.flush(txn)
        return True


def due_query(*, organization=None, limit: int = 100, columns: str = "id") -> tuple[str, list]:
    """The SELECT of the runs whose wake-up has passed, soonest first: for `catch_up_runs`."""
    statement = f"SELECT {columns} FROM {backend.quote_name(Run._meta.db_table)} WHERE wake_at <= %s"
    params: list = [timezone.now()]
    if organization is not None:
        statement += " AND organization_id = %s"
        params.append(organization.pk)
    return statement + " ORDER BY wake_at LIMIT %s", [*params, limit]


def due_beside(query: tuple[str, list], *, organization, order: str) -> tuple[list, list]:
    """The rows of `due_query` for `organization`, and the rows of `query` (text, params), in one round
    trip. On PostgreSQL the two go as one SELECT, which it prepares once its text repeats, where two
    statements in one round trip are parsed and planned every time they come: every agent's `get_work`
    asks this. `order` is `query`'s ORDER BY, its columns named on `q`; `query`'s first column is never
    NULL (a key), which tells its rows from the one row of due keys alone when it finds none."""
    if not sending.postgres():
        due, found = sql.fetch_many([due_query(organization=organization), query])
        return due, found
    due_text, due_params = due_query(organization=organization, columns="id, wake_at")
    text, params = query
    rows = sql.fetch(
        f"SELECT d.due, q.* FROM (SELECT array_agg(id ORDER BY wake_at) AS due FROM ({due_text}) x) d"
        f" LEFT JOIN ({text}) q ON true ORDER BY {order}",
        [*due_params, *params],
    )
    # One row at least, the keys due (or NULL) on each; a row of `query`'s has its first column set.
    return [(key,) for key in rows[0][0] or ()], [row[1:] for row in rows if row[1] is not None]


def catch_up_runs(due) -> int:
    """Bring the runs of `due_query`'s rows up to date; return how many were changed."""
    changed = 0
    for (run_id,) in due:
        try:
            changed += _catch_up_one(run_id)
        except OperationalError:
            log.warning("catch-up of run %s deferred: database busy", run_id)
    return changed


def catch_up(*, organization=None, limit: int = 100) -> int:
    """Bring every run whose wake-up has passed up to date; return how many were changed."""
    # Plain SQL: every read that lists work asks this first, and the answer is nearly always "none".
    due = sql.fetch(*due_query(organization=organization, limit=limit))
    return catch_up_runs(due)


def sweep(*, limit: int = 500) -> int:
    """Catch up every organization's due runs, count the passages of the day just over, send the email
    still owed (daily digests too), forget unused registrations and expired spent refresh tokens.

    What Celery beat schedules.
    """
    metrics.SWEEPS.inc()
    changed = catch_up(limit=limit)
    rollups.roll_up_every_version(now=timezone.now())
    notices.send_pending_email()
    notices.send_digests()
    connections.forget_unused_clients()
    grants.forget_spent_refresh_tokens()
    return changed


def start_sweeper(interval: float) -> threading.Thread:
    """Run the sweep every `interval` seconds in a daemon thread (the embedded `make run` default)."""

    def loop():
        stop = threading.Event()
        while not stop.wait(interval):
            try:
                sweep()
            except Exception:  # the thread must outlive a bad sweep; the error is logged
                log.exception("sweep failed")
            finally:
                connection.close()

    thread = threading.Thread(target=loop, name="sweeper", daemon=True)
    thread.start()
    return thread
