"""What a write owes beyond its rows, recorded in the same transaction and batch once `store.save` has
written them: the search document, the passages out of steps, the notices (and their email after the
commit), the live pages' stamps and the run counters.

`record` is the one effects step: the engine runs it after every save (`engine.flush`), so saving stays
saving and each effect has one place. Its statements join the write's batch (`base.sql.deferred`), so it
adds no round trip.
"""

from __future__ import annotations

from base import metrics, sql

from . import live, notices, search
from .models import Run
from .store import LoadedRun, Saved


def record(txn: LoadedRun, saved: Saved) -> None:
    """Record every effect of the write `saved` describes; call after `store.save`, in its transaction."""
    run = txn.run
    search.keep_document(run, started=saved.started, loaded_data=txn.loaded_data)
    if txn.passages:
        sql.insert_later(*txn.passages)  # appended only: no key wanted back, so they join the write's batch
    owed = 0
    if saved.closed:
        notices.clear_for_items(saved.closed, now=txn.now)
    if txn.new_items:
        owed += notices.record_new_work(run=run, items=txn.new_items, now=txn.now, actor=txn.actor)
    if saved.ended:
        owed += notices.record_run_end(run=run, now=txn.now)
    for step_id, _attempt in txn.notices:
        owed += notices.record_overdue(run=run, row=txn.steps[step_id], now=txn.now)
    if owed:
        sql.on_commit(_send_email(run.pk))
    # The run's own page sees its revision move with this save (runs.live): only those who see its
    # work items opened or closed need their stamps renewed.
    live.touch(*(key for item in [*txn.new_items, *saved.closed] for key in live.audience(item)))
    if saved.started or saved.ended:
        sql.on_commit(_count(run, started=saved.started, ended=saved.ended))


def _send_email(run_id: int):
    root = notices.site_root()  # the host asked, while the request is still being served

    def send():
        notices.send_pending_email(run_id=run_id, root=root)

    return send


def _count(run: Run, *, started: bool, ended: bool):
    process, mode, outcome = run.process_name, run.mode, run.outcome or run.state

    def count():
        if started:
            metrics.RUNS_STARTED.labels(process, mode).inc()
        if ended:
            metrics.RUNS_ENDED.labels(process, outcome).inc()

    return count
