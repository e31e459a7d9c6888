"""The passages a write makes: one row for each way a run leaves a step, kept for the operators' figures.

The engine calls these as it completes, rejects and fails steps, ends runs, refuses a submission or
lets a lease end; `runs.effects` inserts the rows with the write's other statements, in the same round
trip. Nothing here reads run data: each row carries what the figures count and time. A test run leaves
none: the operators' figures count real work only.
"""

from __future__ import annotations

from base import backend

from .models import How, Mode, Passage, RunStep
from .store import LoadedRun


def _passage(txn: LoadedRun, step_id: str, how: str, *, by: str, went_to=None, outcome=None, seconds=None) -> None:
    run = txn.run
    if run.mode == Mode.TEST:
        return
    txn.passages.append(backend.created(
        Passage, organization_id=run.organization_id, run=run, process_name=run.process_name, version_id=run.version_id,
        step_id=step_id, how=how, went_to=went_to, outcome=outcome, by=by, at=txn.now, seconds=seconds,
    ))


def time_in(txn: LoadedRun, row: RunStep) -> float | None:
    """Seconds since the step was last reached (None for a row that never was)."""
    return (txn.now - row.ready_since).total_seconds() if row.ready_since else None


def passed(txn: LoadedRun, row: RunStep, *, went_to: str | None, by: str) -> None:
    """A step completed and the run went on to `went_to`."""
    _passage(txn, row.step_id, How.PASSED, by=by, went_to=went_to, seconds=time_in(txn, row))


def rejected(txn: LoadedRun, row: RunStep, *, back_to: str, by: str) -> None:
    """A step was rejected and the run went back to `back_to`."""
    _passage(txn, row.step_id, How.REJECTED, by=by, went_to=back_to, seconds=time_in(txn, row))


def finished(txn: LoadedRun, row: RunStep, *, outcome: str) -> None:
    """The run reached a finish step; the row times the whole run."""
    seconds = (txn.now - txn.run.started_at).total_seconds()
    _passage(txn, row.step_id, How.FINISHED, by="server", outcome=outcome, seconds=seconds)


def failed(txn: LoadedRun, row: RunStep | None, *, outcome: str, by: str) -> None:
    """The run ended failing at this step: it failed, was rejected with nowhere back, or was cancelled there."""
    seconds = time_in(txn, row) if row is not None and outcome != "cancelled" else None
    _passage(txn, row.step_id if row is not None else "", How.FAILED, by=by, outcome=outcome, seconds=seconds)


def refused(txn: LoadedRun, row: RunStep) -> None:
    """The agent holding the step handed in a submission that was not accepted."""
    if row.claimed_by:
        _passage(txn, row.step_id, How.REFUSED, by=row.claimed_by)


def expired(txn: LoadedRun, row: RunStep) -> None:
    """The agent holding the step let its lease end."""
    if row.claimed_by:
        _passage(txn, row.step_id, How.EXPIRED, by=row.claimed_by)
